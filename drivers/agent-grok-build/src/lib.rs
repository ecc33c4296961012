//! agmsg's grok-build delivery plug (`scripts/drivers/types/grok-build/_delivery.sh`): `on_enable` and
//! `stop_directive` are its own, worded for Grok Build's `monitor` and `kill_command_or_subagent`
//! tools. Its marker rule file (apply, status) is the host's (`delivery::rules::grok_apply`), and
//! on_disable is agmsg's default.
//!
//! The reference (agent-types-reference.md §4) names these two functions, not their words: the words
//! are those of agmsg's public grok-build `_delivery.sh`, except that the stop directive leaves out
//! "Any watch.sh processes have already been killed by this command": agmsg-host kills none (it says
//! so after the directive), and agmsg's own engine, which does, prints the directive the same way.
//!
//! Not done here: agmsg skips the directive while its pidfile names a live watcher (a plug touches
//! nothing; see the host's delivery module). The id is the bare session id: agmsg's `watch.sh` derives
//! its instance id from it (`agmsg_normalize_instance_id`).

use agmsg_guest_sdk::agent::{DeliveryPlug, Mode, PlugError, Target, delivery_texts, session_id, watch_command};

/// The variable Grok Build exports to a session's processes (declared in agmsg-driver.toml).
const SESSION_VAR: &str = "GROK_SESSION_ID";

#[derive(Default)]
struct GrokBuild;

agmsg_guest_sdk::export_agent_plug!(GrokBuild);

/// agmsg's notice, then its directive block (a blank line first).
fn enable_lines(t: &Target, session_id: &str) -> Vec<String> {
    let mut lines = vec![
        "Future sessions: the .grok/rules/agmsg.md rule will prompt the watcher launch (Grok has no SessionStart auto-start).".to_owned(),
        String::new(),
    ];
    lines.extend(delivery_texts::start_watch_directive("monitor", &watch_command(t, session_id)));
    lines.push(String::new());
    lines.extend([
        "Pass the command above verbatim — the session id is already filled in. Each".to_owned(),
        "output line is one message; stop the watcher with kill_command_or_subagent on".to_owned(),
        "its task id when you switch roles or turn delivery off.".to_owned(),
    ]);
    lines
}

impl DeliveryPlug for GrokBuild {
    fn on_enable(&self, t: &Target, mode: Mode) -> Result<Vec<String>, PlugError> {
        // As agmsg's: monitor only (grok-build's delivery_modes have no both).
        match mode {
            Mode::Monitor => Ok(enable_lines(t, &session_id(SESSION_VAR))),
            Mode::Turn | Mode::Both | Mode::Off => Ok(Vec::new()),
        }
    }

    fn stop_directive(&self, _t: &Target) -> Result<String, PlugError> {
        Ok(delivery_texts::STOP_MONITOR_TOOL_DIRECTIVE.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        Target {
            agent_type: "grok-build".into(),
            project: "/p q".into(),
            skill_dir: "/s".into(),
            hooks_file: ".grok/rules/agmsg.md".into(),
        }
    }

    #[test]
    fn monitor_prints_the_grok_directive_with_the_session_id() {
        let lines = enable_lines(&target(), "g-1");
        assert_eq!(lines[2], "AGMSG-DIRECTIVE: For this running session, invoke the monitor tool now with:");
        assert_eq!(lines[3], r"  command: /s/scripts/watch.sh g-1 /p\ q grok-build");
        assert_eq!(GrokBuild.on_enable(&target(), Mode::Turn).unwrap(), Vec::<String>::new());
        assert!(GrokBuild.stop_directive(&target()).unwrap().starts_with("\nAGMSG-DIRECTIVE: If an agmsg inbox watcher"));
        assert!(matches!(GrokBuild.apply(&target(), Mode::Monitor, None), Err(PlugError::NotOverridden)));
        assert!(matches!(GrokBuild.status(&target(), None), Err(PlugError::NotOverridden)));
    }
}
