//! The simulated device under every policy: through `run_job` in real time (real sleeps and
//! wake-ups), and through the [`Engine`] on a fake clock, where every decision is exact.

use std::sync::Arc;
use std::time::Duration;

use pollwise::clock::FakeClock;
use pollwise::policy::{Mode, PolicyConfig};
use pollwise::queue::sim::{LatencyModel, SimQueue, SimTime};
use pollwise_bench::engine::{Engine, Stop};
use pollwise_cli::job::{engine_config, run_job, IoEngine, JobSpec};
use pollwise_cli::Error;

#[test]
fn every_mode_completes_every_request_once_in_real_time() {
    for &mode in Mode::ALL {
        for model in ["fixed:10us", "bimodal:5us,50us,0.2", "lognormal:10us,0.5"] {
            let spec = JobSpec {
                ioengine: IoEngine::Sim(model.parse().unwrap()),
                size: 1 << 20,
                iodepth: 4,
                runtime: Duration::from_secs(30),
                policy: PolicyConfig::new(mode),
                ..JobSpec::default()
            };
            let s = run_job(&spec).unwrap();
            assert_eq!(s.read.ios, 256, "{mode:?} {model}");
            assert_eq!(s.queue.submitted, 256, "{mode:?} {model}");
            assert_eq!(s.queue.completed, 256, "{mode:?} {model}");
        }
    }
}

#[test]
fn engine_on_a_fake_clock_is_exact_and_loses_nothing() {
    for &mode in Mode::ALL {
        let clock = FakeClock::new(0);
        let q = SimQueue::new(
            "uniform:5us,30us".parse::<LatencyModel>().unwrap(),
            42,
            8,
            SimTime::Virtual {
                clock: clock.clone(),
                poll_cost_ns: 50,
            },
        );
        let spec = JobSpec {
            iodepth: 8,
            iodepth_batch_submit: 8,
            iodepth_batch_complete_min: 8,
            ..JobSpec::default()
        };
        let cfg = engine_config(&spec, 1 << 30);
        let clock: Arc<dyn pollwise::clock::Clock> = Arc::new(clock);
        let policy = PolicyConfig::new(mode).build(clock.clone());
        let mut e = Engine::new(Box::new(q), policy, clock, cfg).unwrap();
        e.run(Stop::Ios(5_000)).unwrap();
        let pollwise_bench::engine::EngineStats {
            read,
            queue: qc,
            policy: pc,
            ..
        } = e.stats();
        assert_eq!(read.ios, 5_000, "{mode:?}");
        assert_eq!((qc.submitted, qc.completed), (5_000, 5_000), "{mode:?}");
        assert_eq!(e.in_flight(), 0);
        match mode {
            Mode::Hybrid => assert!(pc.wait.sleeps > 0 && pc.wait.sleeps <= 5_000, "{pc:?}"),
            Mode::Adaptive => assert!(pc.adaptive.grows > 0, "{pc:?}"),
            _ => {}
        }
    }
}

#[test]
fn sim_rejects_options_that_need_a_file() {
    let spec = JobSpec {
        ioengine: IoEngine::Sim(LatencyModel::Fixed(10_000)),
        size: 1 << 20,
        verify: true,
        ..JobSpec::default()
    };
    match run_job(&spec) {
        Err(Error::Usage(m)) => assert!(m.contains("--verify"), "{m}"),
        other => panic!("expected a usage error, got {:?}", other.err()),
    }
}
