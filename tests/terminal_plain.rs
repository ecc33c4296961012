//! The plain driver: the addressless `-` placement, the `AGMSG_TERMINAL` launcher template, and
//! "unsupported" everywhere a plain window has no path.

mod common;

use common::{Env, Run};

fn plain(env: &Env, args: &[&str]) -> Run {
    let mut all = vec!["terminal", "--driver", "plain"];
    all.extend_from_slice(args);
    env.run(&all)
}

#[test]
fn spawn_runs_the_template_with_the_boot_command_quoted() {
    let env = Env::new();
    let dir = env.dir.path().to_str().unwrap().to_owned();
    // The template runs under bash -c with {cmd} replaced by the shell-quoted boot words.
    let env = env.env("AGMSG_TERMINAL", &format!("cd '{dir}' && {{cmd}}"));
    let run = plain(&env, &["spawn", "worker", &dir, "window", "sh", "-c", "printf '%s' \"$0\" > spawned", "it's here"]);
    assert_eq!((run.code, run.stdout.as_str()), (0, "-\n"), "{run:?}");
    assert_eq!(std::fs::read_to_string(env.dir.path().join("spawned")).unwrap(), "it's here");
}

#[test]
fn headless_without_a_template_is_unsupported() {
    let run = plain(&Env::new(), &["spawn", "worker", "/", "window", "true"]);
    assert_eq!((run.code, run.stdout.as_str()), (13, ""), "{run:?}");
    assert!(run.stderr.contains("headless"), "{run:?}");
}

#[test]
fn the_addressless_pane_has_no_path() {
    let env = Env::new();
    assert_eq!(plain(&env, &["detect", "s"]).stdout, "-\n");
    assert_eq!(plain(&env, &["check"]).stdout, "ok\n");
    assert_eq!(plain(&env, &["despawn", "-"]).stdout, "ok\n");
    for (args, stdout) in [
        (vec!["peek", "-"], ""),
        (vec!["poke", "-", "hello"], "runtime_error\n"),
        (vec!["pane-state", "-"], "unknown\n"),
        (vec!["where", "-"], "unsupported\n"),
        (vec!["arrange", "-", "place_below", "-"], "unsupported\n"),
        (vec!["name", "-", "t", "a"], "runtime_error\n"),
    ] {
        let run = plain(&env, &args);
        assert_eq!((run.code, run.stdout.as_str()), (13, stdout), "{args:?}: {run:?}");
    }
    assert!(plain(&env, &["peek", "-"]).stderr.contains("no addressable pane"));
    assert_eq!(plain(&env, &["capability", "spawn"]).code, 0);
    assert_eq!(plain(&env, &["capability", "peek", "-"]).code, 1);
    // A malformed plain placement fails closed.
    assert_eq!(env.run(&["terminal", "peek", "plain:x"]).code, 13);
}

/// An op on a named driver (`--driver`, a placement reference) reads that driver alone: plugins of other
/// names, however many and however broken (a manifest that does not parse, a component that is a FIFO),
/// are never read, hashed or warned about. `terminal list` still reads them all.
#[test]
fn an_op_on_a_named_driver_reads_no_other_plugin() {
    let env = Env::new();
    let plugins = env.dir.path().join(".agents/agmsg/plugins/terminal");
    for i in 0..20 {
        let dir = plugins.join(format!("broken{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("agmsg-driver.toml"), "not [ toml").unwrap();
    }
    let fifo = plugins.join("fifo");
    std::fs::create_dir_all(&fifo).unwrap();
    std::fs::write(
        fifo.join("agmsg-driver.toml"),
        "name = \"fifo\"\naxis = \"terminal\"\nversion = \"1.0.0\"\napi = \"1.0.0\"\ncomponent = \"driver.wasm\"\n",
    )
    .unwrap();
    assert!(std::process::Command::new("mkfifo").arg(fifo.join("driver.wasm")).status().unwrap().success());

    let run = plain(&env, &["check"]);
    assert_eq!((run.code, run.stdout.as_str(), run.stderr.as_str()), (0, "ok\n", ""), "{run:?}");
    let run = env.run(&["terminal", "despawn", "plain:-"]);
    assert_eq!((run.code, run.stdout.as_str(), run.stderr.as_str()), (0, "ok\n", ""), "{run:?}");

    let run = env.run(&["terminal", "list"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("broken19") && run.stderr.contains("fifo"), "the listing reads every plugin: {run:?}");
}
