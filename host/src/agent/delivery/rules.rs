//! The rule-file behaviours of agmsg's bundled plugs: text templates that write, rewrite or remove one
//! project file. Commands name agmsg's scripts in its install directory, each argument quoted as
//! `agmsg_shq` quotes it (identical to agmsg's plain `'...'` unless a value holds a `'`, which agmsg's
//! would break on).

use super::{ApplyReport, Context, FileAnswer, Mode, bash_q, shq};

const RULE_HEAD: &str =
    "# agmsg Integration Rule\n\n## PostToolUse\nAfter each tool call, automatically check the agmsg inbox for unread messages.\n";

/// `rulefile_apply`'s rule for several types at once: one `- Command:` line per type.
fn shared_rule(lines: &[String]) -> String {
    let mut text = RULE_HEAD.to_owned();
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    text
}

fn command_line(ctx: &Context) -> String {
    format!("- Command: {}", ctx.script_command("check-inbox.sh"))
}

/// Whether a `- Command:` line is `agent_type`'s check-inbox command.
fn is_types_line(line: &str, agent_type: &str) -> bool {
    line.strip_prefix("- Command: ").is_some_and(|cmd| cmd.contains(&format!("/scripts/check-inbox.sh' {} ", shq(agent_type))))
}

/// gemini's and antigravity's rule file (`rulefile_apply`), which both types share
/// (`.agent/rules/agmsg.md`). agmsg rewrites or removes the whole file, so turning one type off
/// deletes the other's rule; here the file holds one `- Command:` line per enabled type, and a type's
/// `off` removes its line only (the file goes when none is left). With one type the text is
/// agmsg's, byte for byte.
pub fn shared_rule_apply(ctx: &Context, mode: Mode, current: Option<&str>) -> ApplyReport {
    let mut outcome = ApplyReport::default();
    let mut lines: Vec<String> = current
        .unwrap_or("")
        .lines()
        .filter(|l| l.starts_with("- Command: ") && l.contains("/scripts/check-inbox.sh' ") && !is_types_line(l, &ctx.agent_type))
        .map(str::to_owned)
        .collect();
    match mode {
        Mode::Monitor => {
            outcome
                .warnings
                .push(format!("Warning: 'monitor' mode is not fully supported for {} yet. Using turn-based hook.", ctx.agent_type));
            lines.push(command_line(ctx));
        }
        Mode::Turn | Mode::Both => lines.push(command_line(ctx)),
        Mode::Off => {}
    }
    outcome.answer = Some(if lines.is_empty() { FileAnswer::Remove } else { FileAnswer::Write(shared_rule(&lines)) });
    outcome
}

/// cursor's plug: turn writes an always-applied Cursor rule (`.cursor/rules/agmsg.mdc`: a front
/// matter with `alwaysApply: true`, then agmsg's rule), off removes it; status is its presence.
pub fn cursor_apply(ctx: &Context, mode: Mode) -> FileAnswer {
    match mode {
        Mode::Off => FileAnswer::Remove,
        Mode::Monitor | Mode::Turn | Mode::Both => {
            FileAnswer::Write(format!("---\nalwaysApply: true\n---\n{}", shared_rule(&[command_line(ctx)])))
        }
    }
}

/// The rule of one type alone (agmsg's `rulefile_apply` text): the form any type whose file is a
/// markdown rule may choose.
pub fn single_rule(ctx: &Context) -> FileAnswer {
    FileAnswer::Write(shared_rule(&[command_line(ctx)]))
}

/// `rulefile_status`, per type: turn when the file holds this type's rule (agmsg's says turn whenever
/// the file exists, whichever type wrote it).
pub fn shared_rule_status(ctx: &Context, current: Option<&str>) -> Mode {
    match current {
        Some(text) if text.lines().any(|l| is_types_line(l, &ctx.agent_type)) => Mode::Turn,
        _ => Mode::Off,
    }
}

/// copilot's plug: turn writes a JSON `Stop` hook file (`.github/hooks/agmsg.json`), off removes it.
pub fn copilot_apply(ctx: &Context, mode: Mode) -> FileAnswer {
    if mode != Mode::Turn {
        return FileAnswer::Remove;
    }
    let bash = serde_json::to_string(&ctx.script_command("check-inbox.sh")).expect("a string");
    FileAnswer::Write(format!(
        "{{\n  \"version\": 1,\n  \"hooks\": {{\n    \"Stop\": [\n      {{\n        \"type\": \"command\",\n        \"bash\": {bash},\n        \"timeoutSec\": 30\n      }}\n    ]\n  }}\n}}\n"
    ))
}

const MARKER: &str = "<!-- agmsg-delivery-mode: ";

/// opencode's plug: a rule whose first line records the mode; monitor asks the agent to run watch.sh
/// under opencode-sentinel's `sentinel_monitor` tool, with the turn rule as its fallback.
pub fn opencode_apply(ctx: &Context, mode: Mode) -> FileAnswer {
    let skill = &ctx.skill_dir;
    // As agmsg's plug: the project is `printf %q`-quoted (a bare word where it needs no quoting), the
    // script and the type single-quoted.
    let check = format!("{} {} {}", shq(&format!("{skill}/scripts/check-inbox.sh")), shq(&ctx.agent_type), bash_q(&ctx.project));
    match mode {
        Mode::Turn => FileAnswer::Write(format!("{MARKER}turn -->\n{RULE_HEAD}- Command: {check}\n")),
        Mode::Monitor | Mode::Both => FileAnswer::Write(format!(
            "{MARKER}monitor -->\n# agmsg Integration Rule\n\n## Real-time inbox watcher\n\n\
             At session start (or the first time you run /agmsg this session), launch a\n\
             resident inbox watcher with the `sentinel_monitor` tool so incoming agmsg\n\
             messages stream into this conversation as they arrive:\n\n\
             - command: {} \"${{SENTINEL_SESSION_ID:--}}\" {} {}\n\
             - description: agmsg inbox stream\n\n\
             Do not launch it more than once per session — if a watcher is already\n\
             streaming, skip this step.\n\n\
             ### Fallback (no sentinel_monitor tool)\n\n\
             If the `sentinel_monitor` tool is not available, fall back to a turn-based\n\
             self-check instead: after each tool call, run\n\
             {check}\n\
             to check the agmsg inbox for unread messages.\n",
            shq(&format!("{skill}/scripts/watch.sh")),
            bash_q(&ctx.project),
            ctx.agent_type
        )),
        Mode::Off => FileAnswer::Remove,
    }
}

/// grok-build's plug: a marker rule; turn has the agent poll with `inbox.sh` each turn, monitor has
/// it keep watch.sh running under Grok's `monitor` tool.
pub fn grok_apply(ctx: &Context, mode: Mode) -> FileAnswer {
    let s = &ctx.skill_dir;
    let (p, t) = (shq(&ctx.project), &ctx.agent_type);
    match mode {
        Mode::Turn => FileAnswer::Write(format!(
            "{MARKER}turn -->\n# agmsg — check your inbox each turn\n\n\
             You belong to one or more agmsg teams. Before you respond to the user on each\n\
             turn, check your agmsg inbox so you never miss a teammate's message.\n\n\
             1. Identify yourself (once per session is enough):\n   \
             `{s}/scripts/whoami.sh {p} {t}`\n   \
             It prints your `agent=` name and `teams=` list.\n\
             2. For each team, show and consume unread messages:\n   \
             `{s}/scripts/inbox.sh <team> <your-agent-name>`\n   \
             This prints unread messages AND marks them read in the same call, so nothing\n   \
             is lost.\n\
             3. If any messages were shown, relay them to the user before continuing with\n   \
             their request.\n\n\
             There is no background watcher in turn mode — this self-check is how delivery\n\
             works. Removing this file turns automatic delivery off.\n"
        )),
        Mode::Monitor | Mode::Both => FileAnswer::Write(format!(
            "{MARKER}monitor -->\n# agmsg — keep a real-time inbox watcher running\n\n\
             You belong to one or more agmsg teams. Incoming messages are delivered in real\n\
             time by the `monitor` tool, which streams each new message into THIS\n\
             conversation as a notification.\n\n\
             > Launch with the `monitor` tool ONLY. The `monitor` tool is the only thing\n\
             > that surfaces watcher output to you. Do NOT start the watcher with\n\
             > `run_terminal_command` (with or without `background: true`), and do NOT roll\n\
             > your own `tail -f` of a log file. A terminal/background command writes the\n\
             > stream to a log you never see, so messages keep arriving but you silently miss\n\
             > every one of them — and stray watcher tasks pile up. If unsure which tool you\n\
             > used, you used the wrong one unless it was literally `monitor`.\n\n\
             At the start of each session (and any time no agmsg watcher is running), launch\n\
             it once:\n\n\
             1. Identify yourself if you have not already:\n   \
             `{s}/scripts/whoami.sh {p} {t}`\n   \
             It prints your `agent=` name and `teams=` list.\n\
             2. Start the watcher with the `monitor` tool (that exact tool — not\n   \
             `run_terminal_command`), persistent, so each new message streams into the\n   \
             conversation as a notification. Pass these three fields verbatim:\n   \
             - command: `{s}/scripts/watch.sh \"${{GROK_SESSION_ID:--}}\" {p} {t}`\n   \
             - description: `agmsg inbox stream`\n   \
             - persistent: true\n   \
             Use the command EXACTLY as written. Do NOT append `| head`, `| tail`, any\n   \
             other pipe, or a redirection: each watcher line is one message, and a closed\n   \
             pipe (e.g. `head` exiting after N lines) makes the watcher's writes fail so\n   \
             messages after the Nth are dropped silently.\n\
             3. Verify it attached: a `monitor` task named `agmsg inbox stream` should now\n   \
             be listed and streaming. If you do not see a live `monitor` task (e.g. you\n   \
             ran the command as a terminal/background command by mistake), stop whatever\n   \
             you started and relaunch via the `monitor` tool — otherwise no message will\n   \
             ever reach you.\n\
             4. Each notification line is one message:\n   \
             `<ts> | <team> | <from> -> <to> | <body>`. React as they arrive; reply with\n   \
             `{s}/scripts/send.sh <team> <your-agent-name> <to_agent> \"<message>\"`.\n\n\
             Launch it only once per session — if a watcher is already streaming, do not\n\
             start a second one. Stopping is via the `kill_command_or_subagent` tool on the\n\
             watcher's task id. Removing this file turns automatic delivery off.\n"
        )),
        Mode::Off => FileAnswer::Remove,
    }
}

/// opencode's and grok-build's status: absent off, a monitor marker monitor, else turn.
pub fn marker_status(current: Option<&str>) -> Mode {
    match current {
        None => Mode::Off,
        Some(text) if text.contains("agmsg-delivery-mode: monitor") => Mode::Monitor,
        Some(_) => Mode::Turn,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(t: &str) -> Context {
        Context { agent_type: t.into(), project: "/p".into(), skill_dir: "/s/agmsg".into(), windows_wrap: false }
    }

    #[test]
    fn one_type_is_agmsgs_rule() {
        let out = shared_rule_apply(&ctx("gemini"), Mode::Turn, None);
        assert_eq!(
            out.answer,
            Some(FileAnswer::Write(
                "# agmsg Integration Rule\n\n## PostToolUse\nAfter each tool call, automatically check the agmsg inbox for unread messages.\n- Command: '/s/agmsg/scripts/check-inbox.sh' 'gemini' '/p'\n".into()
            ))
        );
    }

    #[test]
    fn the_shared_file_keeps_the_other_types_rule() {
        let Some(FileAnswer::Write(g)) = shared_rule_apply(&ctx("gemini"), Mode::Turn, None).answer else { panic!() };
        let Some(FileAnswer::Write(both)) = shared_rule_apply(&ctx("antigravity"), Mode::Turn, Some(&g)).answer else { panic!() };
        assert_eq!(shared_rule_status(&ctx("gemini"), Some(&both)), Mode::Turn);
        assert_eq!(shared_rule_status(&ctx("antigravity"), Some(&both)), Mode::Turn);
        let Some(FileAnswer::Write(after)) = shared_rule_apply(&ctx("antigravity"), Mode::Off, Some(&both)).answer else { panic!() };
        assert_eq!(after, g);
        assert_eq!(shared_rule_status(&ctx("antigravity"), Some(&after)), Mode::Off);
        assert_eq!(shared_rule_apply(&ctx("gemini"), Mode::Off, Some(&after)).answer, Some(FileAnswer::Remove));
    }

    #[test]
    fn markers() {
        let FileAnswer::Write(m) = opencode_apply(&ctx("opencode"), Mode::Monitor) else { panic!() };
        assert!(m.starts_with("<!-- agmsg-delivery-mode: monitor -->\n"));
        assert!(m.contains("- command: '/s/agmsg/scripts/watch.sh' \"${SENTINEL_SESSION_ID:--}\" /p opencode\n"), "{m}");
        assert_eq!(marker_status(Some(&m)), Mode::Monitor);
        let FileAnswer::Write(g) = grok_apply(&ctx("grok-build"), Mode::Turn) else { panic!() };
        assert!(g.contains("   `/s/agmsg/scripts/whoami.sh '/p' grok-build`\n"), "{g}");
        assert!(g.ends_with("works. Removing this file turns automatic delivery off.\n"), "{g}");
        assert_eq!(marker_status(Some(&g)), Mode::Turn);
    }
}
