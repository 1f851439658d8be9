use super::*;

const S: Duration = Duration::from_secs(1);

fn bounds() -> Bounds {
    Bounds {
        min_ttl: 5 * S,
        max_ttl: 300 * S,
        stale_for: 60 * S,
    }
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn answer(ips: &[&str], ttl: Duration) -> Outcome {
    Outcome::Answer {
        addresses: ips.iter().map(|s| ip(s)).collect(),
        ttl,
    }
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn only(cache: &mut Cache, now: Instant) -> Option<Resolution> {
    let (list, _) = cache.resolutions(now);
    list.into_iter().next().map(|(_, r)| Resolution::clone(&r))
}

#[test]
fn ttls_are_clamped_to_the_operator_bounds() {
    let b = bounds();
    assert_eq!(b.refresh_after(Duration::ZERO), 5 * S);
    assert_eq!(b.refresh_after(S), 5 * S);
    assert_eq!(b.refresh_after(60 * S), 60 * S);
    assert_eq!(b.refresh_after(86_400 * S), 300 * S);
    let inverted = Bounds {
        min_ttl: 10 * S,
        max_ttl: S,
        ..b
    };
    assert_eq!(inverted.refresh_after(S), 10 * S, "never more often than the minimum");
}

#[test]
fn a_name_is_due_at_once_then_after_its_clamped_ttl() {
    let t0 = Instant::now();
    let mut cache = Cache::new(bounds());
    cache.track(&names(&["a.example.com"]), t0);
    assert_eq!(cache.due(t0), ["a.example.com"]);
    assert_eq!(only(&mut cache, t0), None, "not looked up yet: nothing to serve");
    cache.record("a.example.com", answer(&["203.0.113.7"], S), t0);
    assert!(cache.due(t0 + 4 * S).is_empty());
    assert_eq!(cache.due(t0 + 5 * S), ["a.example.com"]);
    assert_eq!(cache.next_wakeup(), Some(t0 + 5 * S));
}

#[test]
fn a_failed_lookup_serves_the_last_answer_for_the_stale_window_only() {
    let t0 = Instant::now();
    let mut cache = Cache::new(bounds());
    cache.track(&names(&["a.example.com"]), t0);
    cache.record("a.example.com", answer(&["203.0.113.7"], 30 * S), t0);
    let t1 = t0 + 30 * S;
    cache.record("a.example.com", Outcome::Failed("SERVFAIL".into()), t1);
    let stale = Resolution::Stale {
        addresses: vec![ip("203.0.113.7")],
        error: "SERVFAIL".into(),
    };
    assert_eq!(only(&mut cache, t1), Some(stale.clone()));
    assert_eq!(
        cache.due(t1 + 5 * S),
        ["a.example.com"],
        "retried at the minimum interval"
    );
    // A second failure keeps the window's start: the bound is from the first failure.
    cache.record("a.example.com", Outcome::Failed("timed out".into()), t1 + 5 * S);
    assert!(matches!(only(&mut cache, t1 + 59 * S), Some(Resolution::Stale { .. })));
    assert_eq!(cache.next_wakeup(), Some(t1 + 10 * S));
    let failed = Resolution::Failed {
        error: "timed out".into(),
    };
    assert_eq!(only(&mut cache, t1 + 60 * S), Some(failed.clone()), "the window ended");
    assert_eq!(
        only(&mut cache, t1 + 61 * S),
        Some(failed),
        "and the old answer is gone for good"
    );
    cache.record("a.example.com", answer(&["203.0.113.8"], 30 * S), t1 + 70 * S);
    let fresh = Resolution::Answered {
        addresses: vec![ip("203.0.113.8")],
    };
    assert_eq!(only(&mut cache, t1 + 70 * S), Some(fresh));
}

#[test]
fn a_name_that_never_answered_fails_at_once() {
    let t0 = Instant::now();
    let mut cache = Cache::new(bounds());
    cache.track(&names(&["a.example.com"]), t0);
    cache.record("a.example.com", Outcome::Failed("refused".into()), t0);
    let failed = Resolution::Failed {
        error: "refused".into(),
    };
    assert_eq!(only(&mut cache, t0), Some(failed));
}

#[test]
fn a_new_answer_replaces_the_old_one_at_once() {
    let t0 = Instant::now();
    let mut cache = Cache::new(bounds());
    cache.track(&names(&["a.example.com"]), t0);
    cache.record("a.example.com", answer(&["203.0.113.7"], S), t0);
    cache.record("a.example.com", answer(&["169.254.169.254"], S), t0 + 5 * S);
    let rebound = Resolution::Answered {
        addresses: vec![ip("169.254.169.254")],
    };
    assert_eq!(only(&mut cache, t0 + 5 * S), Some(rebound));
}

#[test]
fn unchanged_answers_keep_their_identity_and_report_no_change() {
    let t0 = Instant::now();
    let mut cache = Cache::new(bounds());
    cache.track(&names(&["a.example.com", "b.example.com"]), t0);
    cache.record("a.example.com", answer(&["203.0.113.7"], S), t0);
    let (first, changed) = cache.resolutions(t0);
    assert_eq!(changed, names(&["a.example.com"]));
    assert_eq!(first.len(), 1, "b has not been looked up");
    cache.record("a.example.com", answer(&["203.0.113.7"], S), t0 + 5 * S);
    let (second, changed) = cache.resolutions(t0 + 5 * S);
    assert!(changed.is_empty());
    assert!(Arc::ptr_eq(&first[0].1, &second[0].1));
}

#[test]
fn names_no_backend_uses_are_forgotten() {
    let t0 = Instant::now();
    let mut cache = Cache::new(bounds());
    cache.track(&names(&["a.example.com", "b.example.com"]), t0);
    cache.record("a.example.com", answer(&["203.0.113.7"], S), t0);
    cache.track(&names(&["b.example.com"]), t0);
    cache.record("a.example.com", answer(&["203.0.113.9"], S), t0);
    let (list, _) = cache.resolutions(t0);
    assert!(list.is_empty(), "{list:?}");
    assert_eq!(cache.due(t0), ["b.example.com"]);
}
