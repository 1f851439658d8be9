//! The address policy: one judgement for every IP that enters pier as a destination.
//!
//! IPv6 has several standard ways to carry an IPv4 address, and each one is a way back into IPv4 for
//! some part of the path: the proxy's own stack (mapped and compatible forms), a NAT64 gateway, a 6to4
//! or Teredo relay, an ISATAP router. Judging only the IPv6 address would let `::ffff:127.0.0.1`,
//! `64:ff9b::a9fe:a9fe` or `2002:7f00:1::` through, so every IPv4 address an IPv6 address carries is
//! extracted and judged by the IPv4 rules too, operator CIDRs included. The extraction errs towards
//! finding too much: an ordinary IPv6 address whose interface id happens to look like ISATAP is judged
//! by its embedded IPv4 as well, which can only refuse more.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::Ipv6Net;

use super::{Refusal, Rule, refuse};
use crate::options::Guardrails;

/// Metadata and credential services of cloud providers, which some reach outside the link-local range.
/// Refused under every option (`--allow-loopback` included); `--deny-cidr` cannot make them allowed.
const METADATA_V4: &[(Ipv4Addr, &str)] = &[
    (
        Ipv4Addr::new(169, 254, 169, 254),
        "AWS, GCP, Azure, OCI, OpenStack, DigitalOcean instance metadata",
    ),
    (Ipv4Addr::new(169, 254, 170, 2), "AWS ECS task credentials"),
    (Ipv4Addr::new(169, 254, 170, 23), "AWS EKS Pod Identity agent"),
    (Ipv4Addr::new(169, 254, 0, 23), "Tencent Cloud metadata"),
    (Ipv4Addr::new(100, 100, 100, 200), "Alibaba Cloud metadata"),
    (Ipv4Addr::new(192, 0, 0, 192), "Oracle Cloud legacy metadata"),
    (Ipv4Addr::new(168, 63, 129, 16), "Azure WireServer (host agent)"),
];

const METADATA_V6: &[(Ipv6Addr, &str)] = &[
    (
        Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254),
        "AWS instance metadata (IPv6)",
    ),
    (
        Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x23),
        "AWS EKS Pod Identity agent (IPv6)",
    ),
    (Ipv6Addr::new(0xfd20, 0xce, 0, 0, 0, 0, 0, 0x254), "GCP metadata (IPv6)"),
];

/// The local-use NAT64 prefix (RFC 8215); the operator picks the prefix length inside it.
const LOCAL_NAT64: Ipv6Addr = Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0);

/// Checks a destination IP address.
pub fn check_ip(ip: IpAddr, g: &Guardrails) -> Result<(), Refusal> {
    match ip {
        IpAddr::V4(v4) => check_v4(v4, g).map_err(|rule| refuse(rule, v4.to_string())),
        IpAddr::V6(v6) => {
            check_v6(v6, g).map_err(|rule| refuse(rule, v6.to_string()))?;
            for (form, v4) in embedded_ipv4(v6, &g.nat64_prefixes) {
                check_v4(v4, g).map_err(|rule| refuse(rule, format!("{v6} ({form} form of {v4})")))?;
            }
            Ok(())
        }
    }
}

fn check_v4(ip: Ipv4Addr, g: &Guardrails) -> Result<(), Rule> {
    let [a, b, ..] = ip.octets();
    let rule = if METADATA_V4.iter().any(|(m, _)| *m == ip) {
        Some(Rule::CloudMetadata)
    } else if a == 0 {
        Some(Rule::Unspecified)
    } else if ip.is_loopback() {
        (!g.allow_loopback).then_some(Rule::Loopback)
    } else if a == 169 && b == 254 {
        Some(Rule::LinkLocal)
    } else if ip.is_multicast() {
        Some(Rule::Multicast)
    } else if ip.is_broadcast() {
        Some(Rule::Broadcast)
    } else if a >= 240 {
        Some(Rule::Reserved)
    } else {
        None
    };
    match rule {
        Some(rule) => Err(rule),
        None if denied(IpAddr::V4(ip), g) => Err(Rule::DeniedCidr),
        None => Ok(()),
    }
}

fn check_v6(ip: Ipv6Addr, g: &Guardrails) -> Result<(), Rule> {
    let rule = if METADATA_V6.iter().any(|(m, _)| *m == ip) {
        Some(Rule::CloudMetadata)
    } else if ip.is_unspecified() {
        Some(Rule::Unspecified)
    } else if ip.is_loopback() {
        (!g.allow_loopback).then_some(Rule::Loopback)
    } else if ip.is_unicast_link_local() {
        Some(Rule::LinkLocal)
    } else if ip.is_multicast() {
        Some(Rule::Multicast)
    } else {
        None
    };
    match rule {
        Some(rule) => Err(rule),
        None if denied(IpAddr::V6(ip), g) => Err(Rule::DeniedCidr),
        None => Ok(()),
    }
}

fn denied(ip: IpAddr, g: &Guardrails) -> bool {
    g.denied_cidrs.iter().any(|net| net.contains(&ip))
}

/// Every IPv4 address `ip` carries, with the name of the form that carries it. `nat64` adds the
/// operator's own NAT64 prefixes (RFC 6052 lengths: 32, 40, 48, 56, 64 or 96).
pub fn embedded_ipv4(ip: Ipv6Addr, nat64: &[Ipv6Net]) -> Vec<(&'static str, Ipv4Addr)> {
    let s = ip.segments();
    let low32 = Ipv4Addr::from(ip.to_bits() as u32);
    let mut out = Vec::new();
    if s[..5] == [0; 5] && s[5] == 0xffff {
        out.push(("IPv4-mapped", low32));
    }
    // `::` and `::1` are IPv6's own unspecified and loopback addresses, judged as such.
    if s[..6] == [0; 6] && ip.to_bits() > 1 {
        out.push(("IPv4-compatible", low32));
    }
    if s[..4] == [0; 4] && s[4] == 0xffff && s[5] == 0 {
        out.push(("IPv4-translated", low32));
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        out.push(("NAT64", low32));
    }
    // Which bits carry the IPv4 address depends on the prefix length the operator chose inside the
    // local-use prefix, so every length is judged. Readings in 0.0.0.0/8 are dropped: they are the zero
    // padding of another length, and no translator sends traffic to 0.0.0.0/8.
    if Ipv6Net::new(LOCAL_NAT64, 48).is_ok_and(|n| n.contains(&ip)) {
        let readings = [48, 56, 64, 96].into_iter().filter_map(|len| rfc6052(ip, len));
        out.extend(
            readings
                .filter(|v4| v4.octets()[0] != 0)
                .map(|v4| ("local-use NAT64", v4)),
        );
    }
    for net in nat64.iter().filter(|n| n.contains(&ip)) {
        out.extend(rfc6052(ip, net.prefix_len()).map(|v4| ("NAT64", v4)));
    }
    if s[0] == 0x2002 {
        out.push(("6to4", Ipv4Addr::from(((s[1] as u32) << 16) | s[2] as u32)));
    }
    if s[0] == 0x2001 && s[1] == 0 {
        out.push(("Teredo server", Ipv4Addr::from(((s[2] as u32) << 16) | s[3] as u32)));
        out.push(("Teredo client", Ipv4Addr::from(!u32::from(low32))));
    }
    // RFC 5214 interface id `0000:5efe` / `0200:5efe` (the u/g bits may be set) then the IPv4 address.
    if s[4] & 0xfcff == 0 && s[5] == 0x5efe {
        out.push(("ISATAP", low32));
    }
    out
}

/// The IPv4 address RFC 6052 places after a prefix of `len` bits, skipping bits 64..72.
fn rfc6052(ip: Ipv6Addr, len: u8) -> Option<Ipv4Addr> {
    if !matches!(len, 32 | 40 | 48 | 56 | 64 | 96) {
        return None;
    }
    let bytes = ip.octets();
    let v4: Vec<u8> = (usize::from(len / 8)..16)
        .filter(|&i| i != 8)
        .take(4)
        .map(|i| bytes[i])
        .collect();
    <[u8; 4]>::try_from(v4).ok().map(Ipv4Addr::from)
}

#[cfg(test)]
fn metadata_addresses() -> impl Iterator<Item = (IpAddr, &'static str)> {
    let v4 = METADATA_V4.iter().map(|(ip, what)| (IpAddr::V4(*ip), *what));
    v4.chain(METADATA_V6.iter().map(|(ip, what)| (IpAddr::V6(*ip), *what)))
}

#[cfg(test)]
mod tests;
