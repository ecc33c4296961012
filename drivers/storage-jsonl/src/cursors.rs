//! `read-cursors.tsv`'s text: `team<TAB>agent<TAB>position` lines, the last line for a pair wins. Its
//! reader and writer over text (the store's file is read and written by the crate root), so that the
//! fuzz check `jsonl_cursors` hands it bytes (src/fuzz_check/store.rs, issue 39).

use std::collections::HashMap;

use agmsg_guest_sdk::storage::DriverError;

use crate::CURSORS_FILE;

/// `read-cursors.tsv`: pair -> position, in first-seen order; the last line for a pair wins.
pub struct Cursors {
    pub order: Vec<(String, String)>,
    pub positions: HashMap<(String, String), u64>,
}

impl Cursors {
    /// The file's text read: every non-empty line is three fields separated by tabs, the last a
    /// position (a `u64`); anything else is corrupt, naming its line.
    pub fn parse(text: &str) -> Result<Cursors, DriverError> {
        let mut cursors = Cursors { order: Vec::new(), positions: HashMap::new() };
        for (n, line) in text.lines().enumerate() {
            if line.is_empty() {
                continue;
            }
            let mut fields = line.split('\t');
            let (Some(team), Some(agent), Some(position), None) = (fields.next(), fields.next(), fields.next(), fields.next()) else {
                return Err(DriverError::corrupt(format!("{CURSORS_FILE} line {}: expected team<TAB>agent<TAB>position", n + 1)));
            };
            let position = position
                .parse::<u64>()
                .map_err(|_| DriverError::corrupt(format!("{CURSORS_FILE} line {}: bad position {position:?}", n + 1)))?;
            cursors.set(team, agent, position);
        }
        Ok(cursors)
    }

    pub fn get(&self, team: &str, agent: &str) -> u64 {
        self.positions.get(&(team.to_owned(), agent.to_owned())).copied().unwrap_or(0)
    }

    pub fn set(&mut self, team: &str, agent: &str, position: u64) {
        let key = (team.to_owned(), agent.to_owned());
        if self.positions.insert(key.clone(), position).is_none() {
            self.order.push(key);
        }
    }

    /// The file's text: one line per pair, in first-seen order.
    pub fn text(&self) -> String {
        let mut text = String::new();
        for key in &self.order {
            text.push_str(&format!("{}\t{}\t{}\n", key.0, key.1, self.positions[key]));
        }
        text
    }
}
