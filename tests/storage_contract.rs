//! The storage contract suite (spec §2), run against every storage driver the runtime ships: one test
//! per rule and driver. The rules live with the axis (`host/src/storage/suite.rs`), and `agmsg-host driver
//! test` runs them too, so a third-party driver is held to exactly these.

mod common;

use agmsg_host::storage::suite::RULES;

/// One module per driver, one test per rule; the test fails with the rule's own assertion.
macro_rules! contract_suite {
    ($($driver:ident),* $(,)?) => {
        $(
            mod $driver {
                #[test]
                fn every_rule_has_a_test() {
                    assert_eq!(super::RULES.len(), 22, "add the new rule to the list below");
                }
                contract_rules!($driver, [
                    round_trip_and_recipient_scope,
                    covered_prefix_and_hard_gap,
                    frontier_is_capped_at_the_tip,
                    consume_advances_across_other_traffic,
                    watch_after_delivers_and_always_advances,
                    watch_loop_consumes_exactly_what_was_shown,
                    cursor_tokens_are_transport_safe,
                    bad_pairs_and_cursors_are_refused,
                    history_by_agent_and_team,
                    export_import_round_trip,
                    import_is_all_or_nothing,
                    export_is_atomic_and_replaces_symlinks,
                    compaction_properties,
                    live_wait_times_out_and_sees_what_is_there,
                    live_wait_wakes_on_a_send_from_another_session,
                    receipts_record_once_and_report_the_state,
                    rename_agent_keeps_unread_and_frontier,
                    rename_team_keeps_unread,
                    sync_prepare_is_stable_until_reconcile,
                    sync_apply_pull_imports_once_and_quarantines,
                    resync_status_is_read_only_and_a_gap_is_accepted_once,
                    read_state_merges_frontiers_and_blocks_members,
                ]);
            }
        )*
    };
}

macro_rules! contract_rules {
    ($driver:ident, [$($rule:ident),* $(,)?]) => {
        $(
            #[test]
            fn $rule() {
                let rule = super::RULES.iter().find(|r| r.name == stringify!($rule)).expect("a rule of that name");
                // A rule about an optional interface the driver lacks is skipped, not failed.
                if let Err(failure) = agmsg_conformance::run_rule(&crate::common::harness(), rule, stringify!($driver)) {
                    panic!("{failure}");
                }
            }
        )*
    };
}

contract_suite!(sqlite, jsonl);
