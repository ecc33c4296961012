//! Semantic versions (semver.org 2.0.0): what a manifest's `version` and `api` may say, and the
//! compatibility rule between the contract version a driver was built against and the one the host offers.

/// Whether `version` is semver text (semver.org 2.0.0): `MAJOR.MINOR.PATCH` without leading zeros,
/// then optionally `-PRERELEASE` and `+BUILD`, each dot-separated identifiers of `[0-9A-Za-z-]`
/// (numeric pre-release identifiers without leading zeros); at most 64 characters.
pub fn is_semver(version: &str) -> bool {
    let number = |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && (n == "0" || !n.starts_with('0'));
    let identifiers = |s: &str, numeric_rule: bool| {
        s.split('.').all(|id| {
            !id.is_empty()
                && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && (!numeric_rule || !id.bytes().all(|b| b.is_ascii_digit()) || number(id))
        })
    };
    let (rest, build) = match version.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (version, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (rest, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    version.len() <= 64
        && parts.len() == 3
        && parts.iter().all(|p| number(p) && p.parse::<u64>().is_ok())
        && pre.is_none_or(|p| identifiers(p, true))
        && build.is_none_or(|b| identifiers(b, false))
}

/// `MAJOR.MINOR.PATCH` (a pre-release or build suffix is ignored).
pub fn semver_parts(version: &str) -> Option<(u64, u64, u64)> {
    let core = version.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    let parsed = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(parsed)
}

/// Whether a driver built against `theirs` loads on a host offering `ours`: the same major, and for
/// 1.x and later a minor no newer than ours (0.x: the same minor and a patch no newer).
pub fn compatible(theirs: &str, ours: &str) -> bool {
    match (semver_parts(theirs), semver_parts(ours)) {
        (Some((major, minor, patch)), Some((our_major, our_minor, our_patch))) => {
            major == our_major && if major > 0 { minor <= our_minor } else { minor == our_minor && patch <= our_patch }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semver_text() {
        for good in ["0.1.0", "1.2.3", "1.0.0-rc.1", "1.0.0-alpha-2+build.5", "10.20.30+20260101"] {
            assert!(is_semver(good), "{good}");
        }
        for bad in ["1.2", "01.2.3", "1.2.3-", "1.2.3-01", "1.2.3+", "1.2.3-a..b", "1.2.3-\u{1b}[8m", "1.2.3 ", "+1.2.3", "1.2.3-ü"] {
            assert!(!is_semver(bad), "{bad:?}");
        }
    }

    #[test]
    fn semver() {
        assert_eq!(semver_parts("1.2.3"), Some((1, 2, 3)));
        assert_eq!(semver_parts("1.2.3-rc.1"), Some((1, 2, 3)));
        assert_eq!(semver_parts("1.2"), None);
        assert_eq!(semver_parts("1.2.3.4"), None);
    }

    #[test]
    fn compatibility() {
        assert!(compatible("1.0.0", "1.2.0"));
        assert!(!compatible("1.3.0", "1.2.0"));
        assert!(!compatible("2.0.0", "1.2.0"));
        assert!(compatible("0.2.1", "0.2.3"));
        assert!(!compatible("0.3.0", "0.2.3"));
    }
}
