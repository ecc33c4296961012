//! `agmsg-host driver test`: the contract suite, as a driver author runs it. Every bundled driver, agent
//! type and delivery plug passes; a broken one fails with the rules it breaks named and their reasons.

mod common;

use common::{Env, fixture};

#[test]
fn bundled_drivers_pass() {
    let env = Env::new();
    // Neither offers `live`; sqlite offers `receipts`, jsonl `rename` (agmsg:storage 1.2.0); both `sync`,
    // sqlite also `resync` and `read-state`. The rules
    // of an interface a driver lacks are skipped, visibly, not passed.
    for (driver, passed, skipped) in [
        ("sqlite", 18, ["live_", "live_", "rename_", "rename_"].as_slice()),
        ("jsonl", 17, &["live_", "live_", "receipts_", "resync_", "read_state_"]),
    ] {
        let run = env.run(&["driver", "test", driver]);
        assert_eq!(run.code, 0, "{driver}: {run:?}");
        assert_eq!(run.lines().iter().filter(|l| l.starts_with("PASS  ")).count(), passed, "{run:?}");
        let skips: Vec<&str> = run.lines().into_iter().filter_map(|l| l.strip_prefix("SKIP  ")).collect();
        assert_eq!(skips.len(), skipped.len(), "{run:?}");
        for (skip, prefix) in skips.iter().zip(skipped) {
            assert!(skip.starts_with(prefix), "{skip:?} is not a {prefix} rule: {run:?}");
        }
        let summary = format!("{passed} of 22 rules passed, {} skipped (not applicable to this driver)\n", skipped.len());
        assert!(run.stdout.ends_with(&summary), "{run:?}");
    }
}

#[test]
fn terminal_drivers_pass_their_rules_and_tmux_its_pane_rules_against_a_private_server() {
    let env = Env::new();
    for (driver, total) in [("tmux", 11), ("plain", 6)] {
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
    assert!(run.stdout.contains(" of 22 rules passed"), "{run:?}");

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

/// The rules a types-suite run reported as failing.
fn failing(run: &common::Run) -> Vec<String> {
    run.lines().iter().filter_map(|l| l.strip_prefix("FAIL  ")).map(|l| l.split_whitespace().next().unwrap().to_owned()).collect()
}

#[test]
fn every_bundled_type_and_plug_passes_the_types_suite() {
    let env = Env::new();
    let types = ["agmsg-app", "antigravity", "claude-code", "codex", "copilot", "cursor", "gemini", "grok-build", "hermes", "opencode"];
    for t in types {
        // cursor's, claude-code's and grok-build's plugs are bundled components: their rules run too.
        let has_plug = matches!(t, "cursor" | "claude-code" | "grok-build");
        let total = if has_plug { 10 } else { 5 };
        let run = env.run(&["driver", "test", t]);
        assert_eq!(run.code, 0, "{t}: {run:?}");
        assert!(run.stdout.starts_with(&format!("types contract suite against '{t}'")), "{run:?}");
        assert!(run.stdout.ends_with(&format!("{total} of {total} rules passed\n")), "{t}: {run:?}");
        assert_eq!(run.stdout.contains("PASS  enable_then_disable_keeps_the_users_bytes"), has_plug, "{run:?}");
    }
}

#[test]
fn the_hostile_plug_and_a_broken_type_fail_the_types_suite_by_rule() {
    let env = Env::new();
    // The hostile plug as a package: it answers a text of its own for the user's settings (which the
    // host refuses: a plug only chooses among the host's own forms) and overrides no status.
    let pkg = env.dir.path().join("hostile-pkg");
    std::fs::create_dir(&pkg).unwrap();
    std::fs::copy(fixture("hostile-plug"), pkg.join("driver.wasm")).unwrap();
    std::fs::write(
        pkg.join("agmsg-driver.toml"),
        "name = \"hostile\"\naxis = \"types\"\nversion = \"0.1.0\"\napi = \"1.0.0\"\n[capabilities]\n",
    )
    .unwrap();
    let run = env.run(&["driver", "test", pkg.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    let every_rule = [
        "apply_answers_within_the_rules",
        "status_reports_the_applied_mode",
        "enable_then_disable_keeps_the_users_bytes",
        "notices_and_directives_are_well_formed_lines",
        "ops_not_overridden_fall_back",
    ];
    assert_eq!(failing(&run), every_rule, "{run:?}");
    assert!(
        run.stdout
            .contains("refused the plug's answer: it is not one of agmsg-host's own forms for the file (.hostile = true is not agmsg's)"),
        "the reason is given: {run:?}"
    );
    assert!(run.stdout.ends_with("0 of 5 rules passed\n"), "{run:?}");
    // The component file alone is a plug too (it exports agmsg:agent/driver): the same rules.
    let run = env.run(&["driver", "test", pkg.join("driver.wasm").to_str().unwrap()]);
    assert!(run.stdout.starts_with("types contract suite against "), "{run:?}");
    assert_eq!(failing(&run), every_rule, "{run:?}");

    // A type directory breaking every manifest rule, each failure saying why.
    let dir = env.dir.path().join("broken");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(
        dir.join("type.conf"),
        "name=broken\ntemplate=../template.md\ncli=broken\nmonitr=no\ndelivery_modes=turn sometimes\ndetect=explicit BROKEN\ndetect_proc=*sh\nhooks_file=/etc/agmsg.json\n",
    )
    .unwrap();
    let run = env.run(&["driver", "test", dir.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        failing(&run),
        [
            "manifest_keys_are_agmsgs",
            "template_paths_are_guarded",
            "delivery_modes_are_agmsgs",
            "detection_keys_are_well_formed",
            "hooks_file_stays_in_the_project"
        ],
        "{run:?}"
    );
    for reason in [
        "agmsg reads no key 'monitr'",
        "must be relative, without '..'",
        "\"sometimes\"",
        "matches \"bash\"",
        "Invalid hooks_file for broken",
    ] {
        assert!(run.stdout.contains(reason), "{reason}: {run:?}");
    }
    // Fixed, with its template present, it passes; a template that is a link does not.
    std::fs::write(dir.join("type.conf"), "name=broken\ntemplate=template.md\ncli=broken\ndelivery_modes=turn off\ndetect_proc=broken broken-*\nhooks_file=.broken/hooks.json\n").unwrap();
    std::fs::write(dir.join("template.md"), "/__SKILL_NAME__\n").unwrap();
    let run = env.run(&["driver", "test", dir.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    std::fs::remove_file(dir.join("template.md")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.join("template.md")).unwrap();
    let run = env.run(&["driver", "test", dir.to_str().unwrap()]);
    assert_eq!(failing(&run), ["template_paths_are_guarded"], "{run:?}");
    // Nor one below a directory that is a link out of the type's directory.
    std::fs::remove_file(dir.join("template.md")).unwrap();
    let elsewhere = env.dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("template.md"), "/__SKILL_NAME__\n").unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join("sub")).unwrap();
    std::fs::write(dir.join("type.conf"), "name=broken\ntemplate=sub/template.md\ncli=broken\ndelivery_modes=turn off\ndetect_proc=broken broken-*\nhooks_file=.broken/hooks.json\n").unwrap();
    let run = env.run(&["driver", "test", dir.to_str().unwrap()]);
    assert_eq!(failing(&run), ["template_paths_are_guarded"], "{run:?}");
    assert!(run.stdout.contains("symbolic link"), "{run:?}");
}

/// A reference that names no driver is the command line's fault (2); a component file that is there
/// but cannot be read is the command's failure (1), as every host command's unreadable file is. (It
/// exited 2, the usage code, before the error model reached `driver test`.)
#[test]
fn an_unreadable_component_is_a_failure_not_a_usage_error() {
    let env = Env::new();
    let big = env.dir.path().join("big.wasm");
    // Sparse: one byte over the limit, without writing 256 MiB.
    std::fs::File::create(&big).unwrap().set_len(agmsg_host::plugin::MAX_COMPONENT_BYTES + 1).unwrap();
    let run = env.run(&["driver", "test", big.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("larger than 256 MiB"), "{run:?}");
    let unknown = env.run(&["driver", "test", "nosuch"]);
    assert_eq!(unknown.code, 2, "{unknown:?}");
    assert!(unknown.stderr.contains("names no driver"), "{unknown:?}");
}
