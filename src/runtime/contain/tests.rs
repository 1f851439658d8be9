use super::*;
use crate::model::{Kind, ObjectKey, load};

fn parsed(names: &[&str], generation: i64) -> Model {
    let docs: Vec<String> = names
        .iter()
        .map(|n| {
            format!("apiVersion: v1\nkind: Service\nmetadata: {{name: {n}, namespace: ns, generation: {generation}}}\n")
        })
        .collect();
    load::parse_texts(&[("t.yaml".into(), docs.join("---\n"))])
        .expect("loads")
        .model
}

fn id(name: &str) -> ObjectId {
    (Kind::Service, ObjectKey::new("ns", name))
}

/// `base` plus the objects of `from` named, sharing them (as a source does for unchanged objects).
fn with(base: &Model, from: &Model, names: &[&str]) -> Model {
    let mut m = base.clone();
    for n in names {
        m.take_object(from, &id(n));
    }
    m
}

fn rejection() -> Rejection {
    Rejection {
        gateway: "ns/gw".into(),
        type_url: "type.googleapis.com/envoy.config.route.v3.RouteConfiguration".into(),
        message: "bad regex".into(),
    }
}

/// A fleet that rejects any model holding a Service whose generation is 666 or whose name starts
/// with "bad". Returns the model finally served and how many publishes it took.
fn run(c: &mut Containment, target: Model) -> (Model, usize) {
    let rejects = |m: &Model| {
        m.services
            .iter()
            .any(|(k, s)| k.name.starts_with("bad") || s.metadata.generation == Some(666))
    };
    let mut published = c.set_target(target);
    let mut publishes = 1;
    loop {
        let next = if rejects(&published) {
            c.rejected(&published, rejection())
        } else {
            c.applied(&published)
        };
        match next {
            Some(m) => {
                published = m;
                publishes += 1;
            }
            None => return (published, publishes),
        }
    }
}

fn names(m: &Model) -> Vec<String> {
    m.services.keys().map(|k| k.name.to_string()).collect()
}

#[test]
fn one_culprit_among_many_is_found_in_log2_trials_and_the_rest_served() {
    let mut c = Containment::new();
    let base = parsed(&["a", "b"], 1);
    let (served, _) = run(&mut c, base.clone());
    assert_eq!(names(&served), ["a", "b"]);
    let new: Vec<String> = (0..15).map(|i| format!("n{i:02}")).chain(["bad".into()]).collect();
    let new: Vec<&str> = new.iter().map(String::as_str).collect();
    let (served, publishes) = run(&mut c, with(&base, &parsed(&new, 1), &new));
    let q: Vec<_> = c.quarantined().map(|q| q.id.clone()).collect();
    assert_eq!(q, [id("bad")]);
    assert_eq!(
        served.services.len(),
        17,
        "everything else is served: {:?}",
        names(&served)
    );
    assert!(!c.in_trial());
    // The rejected publish, log2(16) trials, the final publish.
    assert!(publishes <= 1 + 4 + 1, "{publishes} publishes");
    let quarantined = c.quarantined().next().unwrap();
    assert!(!quarantined.previous_served, "new: left out");
    assert_eq!(quarantined.rejection.message, "bad regex");
}

#[test]
fn two_culprits_are_both_quarantined() {
    let mut c = Containment::new();
    let new = ["a", "bad1", "c", "d", "bad2", "f"];
    let (served, _) = run(&mut c, parsed(&new, 1));
    let q: Vec<_> = c.quarantined().map(|q| q.id.clone()).collect();
    assert_eq!(q, [id("bad1"), id("bad2")]);
    assert_eq!(names(&served), ["a", "c", "d", "f"]);
}

#[test]
fn a_rejected_edit_keeps_the_previous_version_until_the_object_changes_again() {
    let mut c = Containment::new();
    let v1 = parsed(&["a", "b", "c"], 1);
    run(&mut c, v1.clone());
    // `b` is edited into something the fleet rejects, and `c` edited harmlessly.
    let v2 = with(&with(&v1, &parsed(&["b"], 666), &["b"]), &parsed(&["c"], 2), &["c"]);
    let (served, _) = run(&mut c, v2.clone());
    let q: Vec<_> = c.quarantined().collect();
    assert_eq!(q.len(), 1);
    assert_eq!(q[0].id, id("b"));
    assert!(q[0].previous_served);
    assert_eq!(served.services.peek(&id("b").1).unwrap().metadata.generation, Some(1));
    assert_eq!(served.services.peek(&id("c").1).unwrap().metadata.generation, Some(2));
    // Another object changing does not release it; its own change does.
    let v3 = with(&v2, &parsed(&["d"], 1), &["d"]);
    assert_eq!(
        c.set_target(v3.clone())
            .services
            .peek(&id("b").1)
            .unwrap()
            .metadata
            .generation,
        Some(1)
    );
    assert_eq!(c.quarantined().count(), 1);
    let v4 = with(&v3, &parsed(&["b"], 3), &["b"]);
    let (served, _) = run(&mut c, v4);
    assert_eq!(c.quarantined().count(), 0);
    assert_eq!(served.services.peek(&id("b").1).unwrap().metadata.generation, Some(3));
}

#[test]
fn a_rejection_no_change_explains_quarantines_nothing() {
    let mut c = Containment::new();
    let m = parsed(&["a"], 1);
    run(&mut c, m.clone());
    let published = c.set_target(m);
    assert!(c.rejected(&published, rejection()).is_none());
    assert_eq!(c.quarantined().count(), 0);
    assert_eq!(c.unexplained(), Some(&rejection()));
}

#[test]
fn an_abandoned_trial_publishes_the_newest_model() {
    let mut c = Containment::new();
    let published = c.set_target(parsed(&["a", "bad", "c"], 1));
    let trial = c.rejected(&published, rejection()).expect("a trial");
    assert!(c.in_trial());
    assert_eq!(
        trial.services.len(),
        1,
        "half of the suspects on top of the empty good model"
    );
    let newest = c.abandon().expect("the newest model");
    assert_eq!(names(&newest), ["a", "bad", "c"]);
    assert!(!c.in_trial());
    assert!(c.abandon().is_none());
}

#[test]
fn a_fleet_that_always_rejects_cannot_quarantine_without_bound() {
    let mut c = Containment::new();
    let new: Vec<String> = (0..40).map(|i| format!("n{i:02}")).collect();
    let new: Vec<&str> = new.iter().map(String::as_str).collect();
    let mut published = c.set_target(parsed(&new, 1));
    let mut steps = 0;
    while let Some(next) = c.rejected(&published, rejection()) {
        published = next;
        steps += 1;
        assert!(steps < 1000);
    }
    assert_eq!(c.quarantined().count(), MAX_ROUNDS as usize);
    assert!(c.unexplained().is_some());
}
