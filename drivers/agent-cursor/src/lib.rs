//! agmsg's cursor delivery plug (`scripts/drivers/types/cursor/_delivery.sh`): the Cursor CLI applies
//! project rules from `.cursor/rules/*.mdc`, and one with `alwaysApply: true` is read on every turn.
//! turn writes that rule (a PostToolUse instruction to check the agmsg inbox), off removes it; status
//! is the file's presence (agmsg's `rulefile_status`). The other ops are agmsg's defaults.

use agmsg_guest_sdk::agent::{Applied, DeliveryPlug, FileAnswer, Mode, PlugError, Target, shq};

#[derive(Default)]
struct Cursor;

agmsg_guest_sdk::export_agent_plug!(Cursor);

/// The rule for turn mode, byte for byte agmsg's.
fn rule(t: &Target) -> String {
    format!(
        "---\nalwaysApply: true\n---\n# agmsg Integration Rule\n\n## PostToolUse\n\
         After each tool call, automatically check the agmsg inbox for unread messages.\n\
         - Command: {} {} {}\n",
        shq(&format!("{}/scripts/check-inbox.sh", t.skill_dir)),
        shq(&t.agent_type),
        shq(&t.project)
    )
}

impl DeliveryPlug for Cursor {
    fn apply(&self, t: &Target, mode: Mode, _current: Option<&str>) -> Result<Applied, PlugError> {
        let file = match mode {
            Mode::Turn => FileAnswer::Write(rule(t)),
            // delivery_modes=turn off: the host's gate refuses monitor and both before this is asked.
            Mode::Monitor | Mode::Both => return Err(PlugError::Failed(format!("'{}' mode is not supported for cursor", mode_name(mode)))),
            Mode::Off => FileAnswer::Remove,
        };
        Ok(Applied { file, notices: Vec::new() })
    }

    fn status(&self, _t: &Target, current: Option<&str>) -> Result<(Mode, Vec<String>), PlugError> {
        Ok((if current.is_some() { Mode::Turn } else { Mode::Off }, Vec::new()))
    }
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Monitor => "monitor",
        Mode::Turn => "turn",
        Mode::Both => "both",
        Mode::Off => "off",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turn_writes_the_rule_and_off_removes_it() {
        let t = Target {
            agent_type: "cursor".into(),
            project: "/p".into(),
            skill_dir: "/s".into(),
            hooks_file: ".cursor/rules/agmsg.mdc".into(),
        };
        let Ok(Applied { file: FileAnswer::Write(text), .. }) = Cursor.apply(&t, Mode::Turn, None) else { panic!() };
        assert!(text.starts_with("---\nalwaysApply: true\n---\n# agmsg Integration Rule\n"));
        assert!(text.ends_with("- Command: '/s/scripts/check-inbox.sh' 'cursor' '/p'\n"));
        assert!(matches!(Cursor.apply(&t, Mode::Off, Some(&text)), Ok(Applied { file: FileAnswer::Remove, .. })));
        assert!(matches!(Cursor.on_enable(&t, Mode::Turn), Err(PlugError::NotOverridden)));
    }
}
