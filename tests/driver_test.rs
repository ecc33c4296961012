//! `agmsg-host driver test`: the contract suite, as a driver author runs it. Every bundled driver
//! passes; a broken driver fails with the rules it breaks named and their reasons.

mod common;

use common::{Env, fixture};

#[test]
fn bundled_drivers_pass() {
    let env = Env::new();
    for driver in ["sqlite", "jsonl"] {
        let run = env.run(&["driver", "test", driver]);
        assert_eq!(run.code, 0, "{driver}: {run:?}");
        assert_eq!(run.lines().iter().filter(|l| l.starts_with("PASS  ")).count(), 15, "{run:?}");
        assert!(run.stdout.ends_with("15 of 15 rules passed\n"), "{run:?}");
    }
}

#[test]
fn terminal_drivers_pass_their_rules_and_tmux_its_pane_rules_against_a_private_server() {
    let env = Env::new();
    for (driver, total) in [("tmux", 9), ("plain", 5)] {
        let run = env.run(&["driver", "test", driver]);
        assert_eq!(run.code, 0, "{driver}: {run:?}");
        assert!(run.stdout.starts_with(&format!("terminal contract suite against '{driver}'")), "{run:?}");
        assert!(run.stdout.ends_with(&format!("{total} of {total} rules passed\n")), "{run:?}");
        assert_eq!(run.stdout.contains("PASS  a_pane_from_spawn_to_gone"), driver == "tmux", "{run:?}");
    }
}

#[test]
fn a_broken_driver_fails_with_the_rules_named() {
    let env = Env::new();
    let broken = fixture("hostile-storage");
    let run = env.run(&["driver", "test", broken.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    let lines = run.lines();
    let failing: Vec<&str> = lines.iter().filter_map(|l| l.strip_prefix("FAIL  ")).map(|l| l.split_whitespace().next().unwrap()).collect();
    assert!(failing.contains(&"round_trip_and_recipient_scope") && failing.contains(&"export_import_round_trip"), "{run:?}");
    // Each failure says why: here the driver refuses every send.
    assert!(run.stdout.contains("unknown misbehaviour"), "{run:?}");
    assert!(run.stdout.contains(" of 15 rules passed"), "{run:?}");

    // A driver that runs tmux but cannot drive panes fails the pane rules, by name.
    let dir = env.dir.path().join("hostile-terminal");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fixture("hostile-terminal"), dir.join("driver.wasm")).unwrap();
    std::fs::copy(common::workspace().join("tests/fixtures/hostile-terminal/terminal.conf"), dir.join("terminal.conf")).unwrap();
    let run = env.run(&["driver", "test", dir.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    for rule in ["detect_names_the_callers_pane", "a_pane_from_spawn_to_gone"] {
        assert!(run.stdout.contains(&format!("FAIL  {rule}")), "{rule}: {run:?}");
    }
    assert!(run.stdout.contains("spawn pane-v succeeds"), "the reason is given: {run:?}");

    let unknown = env.run(&["driver", "test", "nosuch"]);
    assert_eq!(unknown.code, 2, "{unknown:?}");
}
