use super::*;

fn rule_of(ip: &str, g: &Guardrails) -> Option<Rule> {
    check_ip(ip.parse().unwrap(), g).err().map(|e| e.rule)
}

fn loopback_allowed() -> Guardrails {
    Guardrails {
        allow_loopback: true,
        ..Default::default()
    }
}

#[test]
fn native_rules() {
    let g = Guardrails::default();
    let cases = [
        ("127.0.0.1", Some(Rule::Loopback)),
        ("127.8.9.10", Some(Rule::Loopback)),
        ("::1", Some(Rule::Loopback)),
        ("169.254.1.1", Some(Rule::LinkLocal)),
        ("fe80::1", Some(Rule::LinkLocal)),
        ("febf::1", Some(Rule::LinkLocal)),
        ("0.0.0.0", Some(Rule::Unspecified)),
        ("0.1.2.3", Some(Rule::Unspecified)),
        ("::", Some(Rule::Unspecified)),
        ("224.0.0.1", Some(Rule::Multicast)),
        ("239.255.255.250", Some(Rule::Multicast)),
        ("ff02::1", Some(Rule::Multicast)),
        ("255.255.255.255", Some(Rule::Broadcast)),
        ("240.0.0.1", Some(Rule::Reserved)),
        ("10.0.0.1", None),
        ("100.64.0.1", None),
        ("203.0.113.9", None),
        ("2001:db8::1", None),
        ("fd00::1", None),
    ];
    for (ip, want) in cases {
        assert_eq!(rule_of(ip, &g), want, "{ip}");
    }
}

/// Every listed metadata service, and the same addresses in every IPv6 form that carries IPv4, stays
/// refused with loopback allowed and with operator CIDRs set.
#[test]
fn metadata_is_refused_under_every_option() {
    let g = Guardrails {
        denied_cidrs: vec!["10.0.0.0/8".parse().unwrap()],
        ..loopback_allowed()
    };
    for (ip, what) in metadata_addresses() {
        assert_eq!(check_ip(ip, &g).unwrap_err().rule, Rule::CloudMetadata, "{ip} ({what})");
    }
    for ip in [
        "100.100.100.200",
        "192.0.0.192",
        "168.63.129.16",
        "fd00:ec2::254",
        "fd00:ec2::23",
    ] {
        assert_eq!(rule_of(ip, &g), Some(Rule::CloudMetadata), "{ip}");
    }
    for ip in [
        "::ffff:100.100.100.200",
        "64:ff9b::a9fe:a9fe",
        "64:ff9b::c000:c0",
        "2002:a83f:8110::1",
    ] {
        assert_eq!(rule_of(ip, &g), Some(Rule::CloudMetadata), "{ip}");
    }
}

/// Each IPv6 form carrying 127.0.0.1 (or 10.1.2.3 for the operator's CIDR) is judged by the IPv4 rules.
#[test]
fn ipv4_carried_in_ipv6_is_judged_as_ipv4() {
    let loopback_in = [
        "::ffff:127.0.0.1",
        "::ffff:7f00:1",
        "::7f00:1",
        "::127.0.0.2",
        "::ffff:0:7f00:1",
        "64:ff9b::7f00:1",
        "64:ff9b::127.0.0.1",
        // Local-use NAT64 at /48, /56, /64 and /96 (RFC 6052 skips bits 64..72).
        "64:ff9b:1:7f00:0:100::",
        "64:ff9b:1:7f:0:1::",
        "64:ff9b:1:0:7f:0:100:0",
        "64:ff9b:1::7f00:1",
        "2002:7f00:1::",
        "2002:7f00:1:ffff::1",
        // Teredo: server 127.0.0.1; client 127.0.0.1 stored inverted.
        "2001:0:7f00:1::34ff:8ef6",
        "2001:0:c000:201:0:0:80ff:fffe",
        // ISATAP interface ids.
        "2001:db8::5efe:7f00:1",
        "2001:db8:1::200:5efe:7f00:1",
    ];
    let g = Guardrails::default();
    for ip in loopback_in {
        assert_eq!(rule_of(ip, &g), Some(Rule::Loopback), "{ip}");
        assert_eq!(rule_of(ip, &loopback_allowed()), None, "{ip} with loopback allowed");
    }
    let denied = Guardrails {
        denied_cidrs: vec!["10.0.0.0/8".parse().unwrap()],
        ..Default::default()
    };
    for ip in [
        "64:ff9b::a01:203",
        "::ffff:10.1.2.3",
        "2002:a01:203::1",
        "64:ff9b:1::a01:203",
        "::a01:203",
    ] {
        assert_eq!(rule_of(ip, &denied), Some(Rule::DeniedCidr), "{ip}");
        assert_eq!(rule_of(ip, &g), None, "{ip} without the CIDR");
    }
    for ip in ["64:ff9b::a9fe:101", "::ffff:169.254.1.1", "2002:a9fe:101::"] {
        assert_eq!(rule_of(ip, &g), Some(Rule::LinkLocal), "{ip}");
    }
    assert_eq!(rule_of("64:ff9b::e000:1", &g), Some(Rule::Multicast));
    assert_eq!(rule_of("::ffff:0.0.0.0", &g), Some(Rule::Unspecified));
    assert_eq!(rule_of("::2", &g), Some(Rule::Unspecified));
}

#[test]
fn operator_nat64_prefixes() {
    let g = Guardrails {
        nat64_prefixes: vec![
            "2001:db8:64::/96".parse().unwrap(),
            "2001:db8:100::/40".parse().unwrap(),
        ],
        ..Default::default()
    };
    assert_eq!(rule_of("2001:db8:64::7f00:1", &g), Some(Rule::Loopback));
    assert_eq!(rule_of("2001:db8:64::a9fe:a9fe", &g), Some(Rule::CloudMetadata));
    // /40: the IPv4 address takes bytes 5, 6, 7 and 9.
    assert_eq!(rule_of("2001:db8:17f:0:1::", &g), Some(Rule::Loopback));
    assert_eq!(rule_of("2001:db8:64::7f00:1", &Guardrails::default()), None);
    assert_eq!(rule_of("2001:db8:65::7f00:1", &g), None);
}

#[test]
fn the_refusal_names_the_form_and_the_ipv4_address() {
    let e = check_ip("64:ff9b::7f00:1".parse().unwrap(), &Guardrails::default()).unwrap_err();
    assert_eq!(e.value, "64:ff9b::7f00:1 (NAT64 form of 127.0.0.1)");
    assert!(e.to_string().contains("refused by rule loopback"), "{e}");
}

#[test]
fn plain_ipv6_is_not_read_as_ipv4() {
    assert_eq!(embedded_ipv4("2001:db8::1".parse().unwrap(), &[]), vec![]);
    assert_eq!(embedded_ipv4("::1".parse().unwrap(), &[]), vec![]);
    assert_eq!(embedded_ipv4("2606:4700::6810:84e5".parse().unwrap(), &[]), vec![]);
}
