//! The stage on tokio's paused clock, with a scripted resolver: no network, no real waiting.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

use futures::future::BoxFuture;

use super::*;

/// Answers what the test last set for a name, counting lookups.
#[derive(Default)]
struct Script {
    answers: Mutex<HashMap<String, Outcome>>,
    asked: Mutex<Vec<String>>,
}

impl Script {
    fn set(&self, name: &str, outcome: Outcome) {
        self.answers.lock().unwrap().insert(name.into(), outcome);
    }
    fn asked(&self, name: &str) -> usize {
        self.asked.lock().unwrap().iter().filter(|n| *n == name).count()
    }
}

struct Shared(Arc<Script>);

impl Lookup for Shared {
    fn lookup(&self, name: &str) -> BoxFuture<'_, Outcome> {
        self.0.asked.lock().unwrap().push(name.to_string());
        let outcome = self.0.answers.lock().unwrap().get(name).cloned();
        std::future::ready(outcome.unwrap_or_else(|| Outcome::Failed("unscripted".into()))).boxed()
    }
}

const S: Duration = Duration::from_secs(1);

fn answer(ip: &str, ttl: Duration) -> Outcome {
    Outcome::Answer {
        addresses: vec![ip.parse::<IpAddr>().unwrap()],
        ttl,
    }
}

fn model() -> Arc<Model> {
    let text = "apiVersion: gateway.networking.x-k8s.io/v1alpha1\nkind: XBackend\nmetadata: {name: a, namespace: ns}\n\
                spec: {type: ExternalHostname, externalHostname: {hostname: api.example.com}, port: {port: 443}}\n";
    let loaded = crate::model::load::parse_texts(&[("t.yaml".to_string(), text.to_string())]).unwrap();
    Arc::new(loaded.model)
}

struct Running {
    source: watch::Sender<SourceState>,
    out: watch::Receiver<SourceState>,
    script: Arc<Script>,
    _stop: watch::Sender<bool>,
}

fn start(min_ttl: Duration, stale_for: Duration) -> Running {
    let mut opts = Options::default();
    opts.resolution.mode = ResolveMode::Pier;
    opts.resolution.min_ttl = min_ttl;
    opts.resolution.stale_for = stale_for;
    let script = Arc::new(Script::default());
    let metrics = DnsMetrics::new(&mut Registry::default());
    let stage = Stage::new(opts, Arc::new(Shared(script.clone())), metrics);
    let (source, source_rx) = watch::channel(SourceState::default());
    let (out_tx, out) = watch::channel(SourceState::default());
    let (stop, stop_rx) = watch::channel(false);
    tokio::spawn(run(source_rx, out_tx, stage, stop_rx));
    Running {
        source,
        out,
        script,
        _stop: stop,
    }
}

impl Running {
    fn publish(&self, generation: u64) {
        self.source.send_replace(SourceState {
            model: Some(model()),
            generation,
            ..SourceState::default()
        });
    }

    /// The next published state (bounded: the paused clock jumps to the stage's next wake-up).
    async fn next(&mut self) -> SourceState {
        tokio::time::timeout(Duration::from_secs(3600), self.out.changed())
            .await
            .expect("the stage published within an hour of paused time")
            .expect("the stage runs");
        self.out.borrow_and_update().clone()
    }
}

fn resolution(state: &SourceState) -> Option<Resolution> {
    let model = state.model.as_ref()?;
    model
        .resolutions
        .get(&resolution::key("api.example.com"))
        .map(|r| Resolution::clone(r))
}

fn answered(ip: &str) -> Option<Resolution> {
    Some(Resolution::Answered {
        addresses: vec![ip.parse().unwrap()],
    })
}

#[tokio::test(start_paused = true)]
async fn the_first_model_waits_for_its_names_and_answers_follow_their_ttl() {
    let mut s = start(5 * S, 60 * S);
    s.script.set("api.example.com", answer("203.0.113.7", 30 * S));
    s.publish(1);
    let first = s.next().await;
    assert_eq!(resolution(&first), answered("203.0.113.7"), "published with its answer");
    assert_eq!(first.generation, 1);

    // Rebinding: the name is re-pointed; the stage sees it at the TTL's end, not before.
    let t0 = Instant::now();
    s.script.set("api.example.com", answer("169.254.169.254", 30 * S));
    let second = s.next().await;
    assert_eq!(resolution(&second), answered("169.254.169.254"));
    assert_eq!(t0.elapsed(), 30 * S, "looked up again when the TTL ran out");
    assert_eq!(second.generation, 2, "a new answer is a new model");
    assert_eq!(s.script.asked("api.example.com"), 2);
}

#[tokio::test(start_paused = true)]
async fn short_ttls_are_raised_to_the_minimum_and_unchanged_answers_publish_nothing() {
    let mut s = start(5 * S, 60 * S);
    s.script.set("api.example.com", answer("203.0.113.7", Duration::ZERO));
    s.publish(1);
    s.next().await;
    let t0 = Instant::now();
    s.script.set("api.example.com", answer("203.0.113.8", Duration::ZERO));
    let next = s.next().await;
    assert_eq!(t0.elapsed(), 5 * S, "a TTL of 0 is looked up again after --dns-min-ttl");
    assert_eq!(resolution(&next), answered("203.0.113.8"));
    // Ten more lookups with the same answer change nothing downstream.
    tokio::time::sleep(50 * S).await;
    assert!(s.script.asked("api.example.com") >= 10);
    assert!(
        !s.out.has_changed().unwrap(),
        "an unchanged answer republished the model"
    );
}

#[tokio::test(start_paused = true)]
async fn failures_serve_the_last_answer_for_the_stale_window_then_nothing() {
    let mut s = start(5 * S, 20 * S);
    s.script.set("api.example.com", answer("203.0.113.7", 5 * S));
    s.publish(1);
    s.next().await;
    let t0 = Instant::now();
    s.script.set("api.example.com", Outcome::Failed("SERVFAIL".into()));
    let stale = s.next().await;
    assert_eq!(t0.elapsed(), 5 * S);
    assert!(
        matches!(resolution(&stale), Some(Resolution::Stale { .. })),
        "{stale:?}"
    );
    let failed = s.next().await;
    assert_eq!(
        t0.elapsed(),
        25 * S,
        "the stale window is bounded from the first failure"
    );
    assert_eq!(
        resolution(&failed),
        Some(Resolution::Failed {
            error: "SERVFAIL".into()
        })
    );
}

#[tokio::test(start_paused = true)]
async fn a_source_error_passes_through_without_a_new_generation() {
    let mut s = start(5 * S, 20 * S);
    s.script.set("api.example.com", answer("203.0.113.7", 300 * S));
    s.publish(1);
    let first = s.next().await;
    s.source.send_modify(|st| st.error = Some("bad file".into()));
    let next = s.next().await;
    assert_eq!(next.error.as_deref(), Some("bad file"));
    assert_eq!(next.generation, first.generation, "the model did not change");
    s.publish(2);
    assert_eq!(s.next().await.generation, first.generation + 1);
}
