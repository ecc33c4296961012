//! Whether a pane already sits where `arrange` would move it.
//!
//! `place_below` and `place_right` are idempotent: a second call must answer `unchanged` and move
//! nothing. tmux exposes pane rectangles, not its split tree, so "already placed" is a predicate on the
//! visible rectangles: source directly under (or right of) target, aligned and of the same extent. The
//! `+ 1` is the separator cell between the two.

/// The `list-panes -F` format whose rows [`find`] reads.
pub const FORMAT: &str = "#{pane_id}|#{window_id}|#{pane_top}|#{pane_left}|#{pane_width}|#{pane_height}";

/// One pane's rectangle, as tmux listed it.
#[derive(Debug, PartialEq, Eq)]
pub struct Rect<'a> {
    pub window: &'a str,
    pub top: u64,
    pub left: u64,
    pub width: u64,
    pub height: u64,
}

/// Where `arrange` puts the source relative to the target.
#[derive(Clone, Copy, Debug)]
pub enum Placement {
    Below,
    Right,
}

/// The row of `pane` in a [`FORMAT`] listing: `None` when the pane is not listed, `Some(None)` when its
/// row is listed but unreadable (a geometry field that is not a decimal number).
pub fn find<'a>(listing: &'a str, pane: &str) -> Option<Option<Rect<'a>>> {
    let row = listing.lines().find(|row| row.split('|').next() == Some(pane))?;
    Some(parse_row(row))
}

fn parse_row(row: &str) -> Option<Rect<'_>> {
    let mut fields = row.splitn(6, '|').skip(1);
    let window = fields.next()?;
    let mut number = || fields.next().and_then(decimal);
    Some(Rect { window, top: number()?, left: number()?, width: number()?, height: number()? })
}

/// A non-empty run of ASCII digits (what bash's `case ''|*[!0-9]*` lets through), as a number.
fn decimal(field: &str) -> Option<u64> {
    if field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    field.parse().ok()
}

/// Whether `source` already occupies the split that moving it `placement` of `target` would create.
pub fn already_placed(placement: Placement, source: &Rect<'_>, target: &Rect<'_>) -> bool {
    if source.window != target.window {
        return false;
    }
    match placement {
        Placement::Below => {
            source.left == target.left
                && source.width == target.width
                && Some(source.top) == target.top.checked_add(target.height).and_then(|v| v.checked_add(1))
        }
        Placement::Right => {
            source.top == target.top
                && source.height == target.height
                && Some(source.left) == target.left.checked_add(target.width).and_then(|v| v.checked_add(1))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = "%0|@0|0|0|80|11\n%1|@0|12|0|80|11\n%2|@0|0|81|40|24\n%3|@1|0|0|x|1\n";

    #[test]
    fn finds_rows_by_exact_pane_id() {
        let rect = find(LISTING, "%1").expect("listed").expect("readable");
        assert_eq!(rect, Rect { window: "@0", top: 12, left: 0, width: 80, height: 11 });
        assert!(find(LISTING, "%9").is_none());
        assert!(find(LISTING, "%").is_none());
        assert_eq!(find(LISTING, "%3"), Some(None));
    }

    #[test]
    fn below_and_right_are_recognised() {
        let top = find(LISTING, "%0").flatten().expect("row");
        let bottom = find(LISTING, "%1").flatten().expect("row");
        assert!(already_placed(Placement::Below, &bottom, &top));
        assert!(!already_placed(Placement::Below, &top, &bottom));
        assert!(!already_placed(Placement::Right, &bottom, &top));
        let side = Rect { window: "@0", top: 0, left: 81, width: 40, height: 11 };
        assert!(already_placed(Placement::Right, &side, &top));
        let elsewhere = Rect { window: "@1", ..bottom };
        assert!(!already_placed(Placement::Below, &elsewhere, &top));
    }
}
