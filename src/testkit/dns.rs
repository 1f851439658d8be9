//! A tiny authoritative DNS responder on `127.0.0.1:<ephemeral>/udp`, so Envoy's STRICT_DNS clusters resolve
//! real-looking names (`api.demo.test`, `api.e2e.test`) to loopback upstreams — no root, no `/etc/hosts`,
//! and no query ever leaves the machine (Envoy's c-ares resolver is pointed here and nowhere else).
//!
//! It answers A queries for configured names with their IPv4 addresses, any other type for a configured
//! name with an empty NOERROR (so an AAAA lookup does not hide the A record), and NXDOMAIN for everything
//! else. Names can be re-pointed while it runs. Hand-rolled (RFC 1035 §4.1) because it is ~100 lines and a
//! DNS server crate would be a large dependency for that.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use tokio::net::UdpSocket;
use tokio::task::JoinHandle;

/// TTL of every answer. Short, so a re-pointed name is picked up quickly when Envoy respects TTLs.
pub const TTL_SECS: u32 = 1;

const TYPE_A: u16 = 1;
const CLASS_IN: u16 = 1;
const RCODE_NXDOMAIN: u16 = 3;
const RCODE_FORMERR: u16 = 1;

#[derive(Default)]
struct Zone {
    records: HashMap<String, Vec<Ipv4Addr>>,
    queries: HashMap<String, usize>,
}

/// The running responder; stops when dropped.
pub struct Dns {
    pub addr: SocketAddr,
    zone: Arc<Mutex<Zone>>,
    task: JoinHandle<()>,
}

impl Dns {
    /// Binds `127.0.0.1:<ephemeral>/udp` and starts answering (with no names yet: see [`Dns::set`]).
    pub async fn start() -> std::io::Result<Dns> {
        let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = socket.local_addr()?;
        let zone = Arc::new(Mutex::new(Zone::default()));
        let task = tokio::spawn(serve(socket, zone.clone()));
        Ok(Dns { addr, zone, task })
    }

    /// Points `name` at `ips` (replacing what it had).
    pub fn set(&self, name: &str, ips: &[Ipv4Addr]) {
        let mut zone = self.zone.lock().unwrap();
        zone.records.insert(normalize(name), ips.to_vec());
    }

    /// How many queries (of any type) asked for `name`.
    pub fn queries(&self, name: &str) -> usize {
        self.zone
            .lock()
            .unwrap()
            .queries
            .get(&normalize(name))
            .copied()
            .unwrap_or(0)
    }
}

impl Drop for Dns {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn normalize(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

async fn serve(socket: UdpSocket, zone: Arc<Mutex<Zone>>) {
    let mut buf = [0u8; 1500];
    loop {
        let Ok((len, peer)) = socket.recv_from(&mut buf).await else {
            continue;
        };
        if let Some(reply) = answer(&buf[..len], &zone) {
            let _ = socket.send_to(&reply, peer).await;
        }
    }
}

/// The reply to one query packet, `None` for something that is not a query at all.
fn answer(query: &[u8], zone: &Mutex<Zone>) -> Option<Vec<u8>> {
    if query.len() < 12 || query[2] & 0x80 != 0 {
        return None; // too short for a header, or a response
    }
    let flags_in = u16::from_be_bytes([query[2], query[3]]);
    let qdcount = u16::from_be_bytes([query[4], query[5]]);
    let question = parse_question(query);
    // QR=1, opcode and RD copied, AA=1, RA=1.
    let mut flags = 0x8000 | (flags_in & 0x7900) | 0x0400 | 0x0080;
    let mut reply = query[..2].to_vec();
    let Some((name, qtype, end)) = question.filter(|_| qdcount == 1) else {
        flags |= RCODE_FORMERR;
        reply.extend_from_slice(&flags.to_be_bytes());
        reply.extend_from_slice(&[0; 8]);
        return Some(reply);
    };
    let ips = {
        let mut zone = zone.lock().unwrap();
        *zone.queries.entry(name.clone()).or_default() += 1;
        zone.records.get(&name).cloned()
    };
    let answers: Vec<Ipv4Addr> = match &ips {
        Some(ips) if qtype == TYPE_A => ips.clone(),
        _ => Vec::new(),
    };
    if ips.is_none() {
        flags |= RCODE_NXDOMAIN;
    }
    reply.extend_from_slice(&flags.to_be_bytes());
    reply.extend_from_slice(&1u16.to_be_bytes()); // QDCOUNT
    reply.extend_from_slice(&(answers.len() as u16).to_be_bytes()); // ANCOUNT
    reply.extend_from_slice(&[0, 0, 0, 0]); // NSCOUNT, ARCOUNT (the query's EDNS OPT is not echoed)
    reply.extend_from_slice(&query[12..end]);
    for ip in answers {
        reply.extend_from_slice(&[0xc0, 0x0c]); // pointer to the question's name at offset 12
        reply.extend_from_slice(&TYPE_A.to_be_bytes());
        reply.extend_from_slice(&CLASS_IN.to_be_bytes());
        reply.extend_from_slice(&TTL_SECS.to_be_bytes());
        reply.extend_from_slice(&4u16.to_be_bytes());
        reply.extend_from_slice(&ip.octets());
    }
    Some(reply)
}

/// The first question: lowercase dotted name, QTYPE, and the offset just past QCLASS.
fn parse_question(packet: &[u8]) -> Option<(String, u16, usize)> {
    let mut pos = 12;
    let mut labels = Vec::new();
    loop {
        let len = *packet.get(pos)? as usize;
        pos += 1;
        if len == 0 {
            break;
        }
        if len & 0xc0 != 0 {
            return None; // compression pointers do not occur in a question
        }
        labels.push(String::from_utf8_lossy(packet.get(pos..pos + len)?).to_ascii_lowercase());
        pos += len;
    }
    let qtype = u16::from_be_bytes([*packet.get(pos)?, *packet.get(pos + 1)?]);
    packet.get(pos + 3)?;
    Some((labels.join("."), qtype, pos + 4))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
        let mut q = id.to_be_bytes().to_vec();
        q.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]); // RD, one question
        for label in name.split('.') {
            q.push(label.len() as u8);
            q.extend_from_slice(label.as_bytes());
        }
        q.push(0);
        q.extend_from_slice(&qtype.to_be_bytes());
        q.extend_from_slice(&CLASS_IN.to_be_bytes());
        q
    }

    async fn ask(dns: &Dns, id: u16, name: &str, qtype: u16) -> Vec<u8> {
        let client = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        client.send_to(&query(id, name, qtype), dns.addr).await.unwrap();
        let mut buf = [0u8; 512];
        let (len, _) = tokio::time::timeout(std::time::Duration::from_secs(5), client.recv_from(&mut buf))
            .await
            .expect("the responder answers")
            .unwrap();
        buf[..len].to_vec()
    }

    #[tokio::test]
    async fn answers_a_records_nodata_and_nxdomain() {
        let dns = Dns::start().await.unwrap();
        dns.set(
            "API.e2e.test.",
            &[Ipv4Addr::new(127, 0, 0, 7), Ipv4Addr::new(127, 0, 0, 8)],
        );

        let reply = ask(&dns, 0xbeef, "api.E2E.test", TYPE_A).await;
        assert_eq!(&reply[..2], &[0xbe, 0xef], "the id is echoed");
        assert_eq!(reply[3] & 0x0f, 0, "NOERROR");
        assert_eq!(u16::from_be_bytes([reply[6], reply[7]]), 2, "two answers");
        let question_len = query(0, "api.E2E.test", TYPE_A).len() - 12;
        let first = 12 + question_len;
        assert_eq!(&reply[first + 12..first + 16], &[127, 0, 0, 7]);
        assert_eq!(&reply[first + 16 + 12..first + 16 + 16], &[127, 0, 0, 8]);

        let aaaa = ask(&dns, 2, "api.e2e.test", 28).await;
        assert_eq!(
            (aaaa[3] & 0x0f, aaaa[7]),
            (0, 0),
            "AAAA for a known name: NOERROR, no answer"
        );

        let missing = ask(&dns, 3, "nope.e2e.test", TYPE_A).await;
        assert_eq!((missing[3] & 0x0f, missing[7]), (3, 0), "unknown name: NXDOMAIN");

        dns.set("api.e2e.test", &[Ipv4Addr::new(127, 0, 0, 9)]);
        let moved = ask(&dns, 4, "api.e2e.test", TYPE_A).await;
        assert_eq!(
            &moved[moved.len() - 4..],
            &[127, 0, 0, 9],
            "re-pointed names answer the new address"
        );
        assert_eq!(dns.queries("api.e2e.test"), 3);
    }
}
