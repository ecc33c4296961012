//! The one grammar every orca id passes before it reaches `orca`.
//!
//! Every handle agmsg measured on real Orca instances is `term_` followed by a UUID's five hyphen-separated
//! hex groups of 8-4-4-4-12 digits (`term_ea11f227-ca2c-44b0-a3e6-75c62b9f20ba`). Orca has one local
//! runtime, so the instance-qualified locator form `local:<handle>` names the same handle; any other
//! instance is malformed rather than a reason to target whatever runtime is around. Nothing outside hex
//! digits and hyphens gets through, which also keeps a TAB or newline out of a placement record.

/// The one instance every orca id belongs to (orca's `executionHostId`, measured as `local`).
pub const INSTANCE: &str = "local";

/// The bare handle of `id` (a handle, or `local:<handle>`), or `None` when it is not in the grammar.
pub fn parse(id: &str) -> Option<&str> {
    let bare = id.strip_prefix("local:").unwrap_or(id);
    handle_ok(bare).then_some(bare)
}

/// `term_` + 8-4-4-4-12 hex digits, nothing else.
pub fn handle_ok(handle: &str) -> bool {
    let Some(uuid) = handle.strip_prefix("term_") else { return false };
    let groups: Vec<&str> = uuid.split('-').collect();
    groups.len() == 5 && groups.iter().zip([8, 4, 4, 4, 12]).all(|(g, len)| g.len() == len && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &str = "term_ea11f227-ca2c-44b0-a3e6-75c62b9f20ba";

    #[test]
    fn accepts_handles_and_the_local_locator() {
        assert_eq!(parse(H), Some(H));
        assert_eq!(parse(&format!("local:{H}")), Some(H));
        assert!(parse("term_EA11F227-CA2C-44B0-A3E6-75C62B9F20BA").is_some());
    }

    #[test]
    fn refuses_everything_else() {
        for bad in [
            "",
            "term_",
            "term_a-b-c-d-e",
            "ea11f227-ca2c-44b0-a3e6-75c62b9f20ba",
            "remote:term_ea11f227-ca2c-44b0-a3e6-75c62b9f20ba",
            "local:local:term_ea11f227-ca2c-44b0-a3e6-75c62b9f20ba",
            "term_ea11f227-ca2c-44b0-a3e6-75c62b9f20ba;kill",
            "term_ea11f227-ca2c-44b0-a3e6-75c62b9f20b\t",
            "term_ea11f227--ca2c-44b0-a3e6-75c62b9f20b",
            "term_ea11f227-ca2c-44b0-a3e6-75c62b9f20ba\n",
            "term_ga11f227-ca2c-44b0-a3e6-75c62b9f20ba",
            " term_ea11f227-ca2c-44b0-a3e6-75c62b9f20ba",
            "term_ea11f227-ca2c-44b0-a3e6-75c62b9f20ba-",
        ] {
            assert!(parse(bad).is_none(), "{bad:?} must be refused");
        }
    }
}
