//! The wildcard fast path (the diff of two persistent views) must give what the walk of every resource
//! gives, through random sequences of views, held removals included.

use super::*;
use crate::envoy::Resources;
use crate::envoy::pb::cluster::Cluster;
use crate::snapshot::pack;
use crate::xds::known::Known;

/// A view of clusters `c0..c{n}`: each present or not, at one of a few contents.
fn view(state: &[Option<u32>]) -> View {
    let clusters = state
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            v.map(|v| Cluster {
                name: format!("c{i}"),
                per_connection_buffer_limit_bytes: Some(envoy_types::pb::google::protobuf::UInt32Value { value: v }),
                ..Default::default()
            })
        })
        .collect();
    let res = Resources {
        clusters,
        ..Resources::default()
    };
    View::new(pack("gw", &res).clusters)
}

fn resources(diff: &Diff<'_>) -> Vec<Resource> {
    diff.upserts
        .iter()
        .map(|(name, entry)| Resource {
            name: (*name).clone(),
            version: entry.version.clone(),
            ..Default::default()
        })
        .collect()
}

fn summary(diff: &Diff<'_>) -> (Vec<(String, String)>, Vec<String>) {
    let upserts = diff
        .upserts
        .iter()
        .map(|(n, e)| ((*n).clone(), e.version.clone()))
        .collect();
    (upserts, diff.removed.clone())
}

#[test]
fn the_fast_wildcard_diff_is_the_full_walk() {
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut state: Vec<Option<u32>> = (0..40).map(|i| (i % 3 != 0).then_some(0)).collect();
    let mut st = TypeState {
        subscribed: true,
        wildcard: true,
        ..TypeState::default()
    };
    let mut fast_paths = 0;
    for _ in 0..400 {
        for _ in 0..next(4) {
            let i = next(state.len() as u64) as usize;
            state[i] = match next(3) {
                0 => None,
                _ => Some(next(3) as u32),
            };
        }
        let v = view(&state);
        let hold = next(4) == 0;
        let fast = st.diff(XdsType::Cluster, &v, hold);
        let copied = st
            .known
            .names()
            .map(|n| (n.clone(), st.known.get(n).unwrap().to_string()))
            .collect();
        let slow = TypeState {
            known: Known::Map(copied),
            wildcard: true,
            ..TypeState::default()
        };
        let walked = slow.diff(XdsType::Cluster, &v, hold);
        assert_eq!(summary(&fast), summary(&walked));
        assert_eq!(fast.held, walked.held);
        fast_paths += usize::from(st.known.view().is_some());
        let sent = resources(&fast);
        st.sent(&sent, &fast.removed, &v, fast.held);
    }
    assert!(fast_paths > 200, "the fast path ran {fast_paths} times in 400");
}
