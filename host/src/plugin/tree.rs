//! A plugin directory read as one snapshot, never following a symbolic link: the directory is an
//! [`fsroot::Dir`] opened without following its own last component (so `<base>/types/<name>` may not
//! itself be a link out of its base), and every entry below it is reached through it. A symlink, a
//! FIFO, a device or a socket anywhere is an error, so a hostile directory cannot make the host read
//! outside it; and what is hashed is the bytes the host then uses (an agent type's `type.conf`, its
//! plug component).

use std::path::{Component, Path};

use crate::error::HostError;
use crate::fsroot::{self, Why};

/// At most this deep below the directory, this many entries, and this many bytes in all.
pub const MAX_DEPTH: usize = 4;
pub const MAX_ENTRIES: usize = 4096;
pub const MAX_TOTAL_BYTES: u64 = super::MAX_COMPONENT_BYTES;

/// Every entry of a directory: its path relative to the directory (`/`-separated) and, for a file,
/// its bytes (`None`: a directory); sorted by path.
#[derive(Debug, Default)]
pub struct Tree {
    pub entries: Vec<(String, Option<Vec<u8>>)>,
}

/// A plugin's file or directory refused or unreadable, in plugin words: the request cannot be met
/// ([`crate::error::ExitClass::Refused`]), whatever the reason.
fn refused(e: fsroot::Error) -> HostError {
    let path = e.path.display();
    HostError::refused(match e.why {
        Why::Link => format!("{path} is a symbolic link (refused: a plugin's files must be inside its directory)"),
        Why::NotDir => format!("{path} is not a directory (or is a symbolic link; refused)"),
        // As `read_opened` words it for a file opened by path.
        Why::NotRegular => format!("cannot read {path}: not a regular file"),
        Why::Missing => format!("{path}: {}", std::io::Error::from_raw_os_error(libc::ENOENT)),
        Why::Io(inner) => format!("{path}: {inner}"),
        Why::BadPath => e.to_string(),
    })
}

/// Read the regular file `name` of `at` without following a link, at most `max_bytes`.
fn read_regular_at(at: &fsroot::Dir, name: &str, max_bytes: u64) -> Result<Vec<u8>, HostError> {
    let file = at.open_regular(name).map_err(refused)?;
    super::read_opened(file, &at.join(name), max_bytes)
}

/// Read `dir` (itself not a symlink) and everything below it.
pub fn read(dir: &Path) -> Result<Tree, HostError> {
    fn walk(
        at: &fsroot::Dir,
        root: &Path,
        rel: &str,
        depth: usize,
        total: &mut u64,
        out: &mut Vec<(String, Option<Vec<u8>>)>,
    ) -> Result<(), HostError> {
        let mut names = Vec::new();
        for name in at.list().map_err(refused)? {
            let name = name
                .into_string()
                .map_err(|_| HostError::refused(format!("{}: a file name that is not UTF-8", root.join(rel).display())))?;
            // Counted while listing: a directory of millions of entries is refused, not first read whole.
            if out.len() + names.len() >= MAX_ENTRIES {
                return Err(too_many(root));
            }
            names.push(name);
        }
        names.sort();
        for name in names {
            let child = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
            let path = root.join(&child);
            if out.len() >= MAX_ENTRIES {
                return Err(too_many(root));
            }
            let Some(meta) = at.symlink_metadata(&name).map_err(refused)? else {
                return Err(refused(fsroot::Error { path, why: Why::Missing }));
            };
            let kind = meta.file_type();
            if kind.is_symlink() {
                return Err(refused(fsroot::Error { path, why: Why::Link }));
            } else if kind.is_dir() {
                if depth >= MAX_DEPTH {
                    return Err(HostError::refused(format!("{}: nested more than {MAX_DEPTH} levels", path.display())));
                }
                out.push((child.clone(), None));
                let sub = at.open_dir(&name).map_err(refused)?;
                walk(&sub, root, &child, depth + 1, total, out)?;
            } else if kind.is_file() {
                if *total + meta.len() > MAX_TOTAL_BYTES {
                    return Err(HostError::refused(format!(
                        "{}: more than {} of files",
                        root.display(),
                        super::size_text(MAX_TOTAL_BYTES)
                    )));
                }
                let bytes = read_regular_at(at, &name, MAX_TOTAL_BYTES - *total)?;
                *total += bytes.len() as u64;
                out.push((child, Some(bytes)));
            } else {
                return Err(HostError::refused(format!("{} is not a regular file or a directory (refused)", path.display())));
            }
        }
        Ok(())
    }
    fn too_many(root: &Path) -> HostError {
        HostError::refused(format!("{}: more than {MAX_ENTRIES} files", root.display()))
    }
    let root = fsroot::Dir::open_ambient_nofollow(dir).map_err(refused)?;
    let mut entries = Vec::new();
    walk(&root, dir, "", 0, &mut 0, &mut entries)?;
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Tree { entries })
}

/// `rel` as the tree names it: plain components joined by `/` (`./a//b` is `a/b`); `None` for a path
/// that is absolute, climbs (`..`) or is empty.
pub fn normalize(rel: &Path) -> Option<String> {
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(p) => parts.push(p.to_str()?),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

impl Tree {
    /// The bytes of the file at `rel` (a relative path), if it is one.
    pub fn file(&self, rel: &Path) -> Option<&[u8]> {
        let rel = normalize(rel)?;
        self.entries.iter().find(|(p, _)| *p == rel).and_then(|(_, bytes)| bytes.as_deref())
    }

    /// sha256 over every entry except the file `skip`: each path with its kind and, for a file, its
    /// content's sha256, one line each, sorted. What trust pins as a package's code.
    pub fn sha256_without(&self, skip: &str) -> String {
        pin(&self.hashed(), skip)
    }

    /// Every entry with, for a file, its size and its content's sha256 (`None`: a directory), in the
    /// tree's order: each file hashed once, for the pin ([`pin`]) and for what is shown of it.
    pub fn hashed(&self) -> Vec<(String, Option<(usize, String)>)> {
        self.entries.iter().map(|(p, bytes)| (p.clone(), bytes.as_ref().map(|b| (b.len(), super::sha256_hex(b))))).collect()
    }

    /// The tree as a tar (what a published agent type carries): its entries in order, directories as
    /// directories, files at 0644, no owner and no time, so the same tree gives the same bytes.
    pub fn to_tar(&self) -> Vec<u8> {
        let mut tar = tar::Builder::new(Vec::new());
        for (path, bytes) in &self.entries {
            let mut header = tar::Header::new_ustar();
            header.set_mtime(0);
            let written = match bytes {
                Some(bytes) => {
                    header.set_entry_type(tar::EntryType::Regular);
                    header.set_mode(0o644);
                    header.set_size(bytes.len() as u64);
                    tar.append_data(&mut header, path, bytes.as_slice())
                }
                None => {
                    header.set_entry_type(tar::EntryType::Directory);
                    header.set_mode(0o755);
                    header.set_size(0);
                    tar.append_data(&mut header, path, std::io::empty())
                }
            };
            written.expect("a tar in memory");
        }
        tar.into_inner().expect("a tar in memory")
    }

    /// Read a tar a stranger made as a tree, with [`read`]'s limits: only files and directories (a
    /// link, a device or anything else is refused), every path inside (none absolute, none climbing),
    /// each named once and its directories before it, at most [`MAX_DEPTH`] deep, [`MAX_ENTRIES`]
    /// entries and [`MAX_TOTAL_BYTES`] of files. Nothing is written anywhere.
    pub fn from_tar(bytes: &[u8], what: &str) -> Result<Tree, HostError> {
        use std::io::Read;
        let bad = |why: String| HostError::refused(format!("{what}: {why}"));
        let mut archive = tar::Archive::new(bytes);
        // By path: a duplicate or a missing parent is one lookup, and the tree comes out sorted.
        let mut entries: std::collections::BTreeMap<String, Option<Vec<u8>>> = std::collections::BTreeMap::new();
        let mut total = 0u64;
        for entry in archive.entries().map_err(|e| bad(format!("not a tar ({e})")))? {
            let mut entry = entry.map_err(|e| bad(format!("not a tar ({e})")))?;
            if entries.len() >= MAX_ENTRIES {
                return Err(bad(format!("more than {MAX_ENTRIES} files")));
            }
            let raw = entry.path_bytes().into_owned();
            let shown = crate::display::line(&String::from_utf8_lossy(&raw)).into_owned();
            let path = std::str::from_utf8(&raw)
                .ok()
                .and_then(|p| normalize(Path::new(p)))
                .ok_or_else(|| bad(format!("{shown:?} is not a path inside the package")))?;
            if path.split('/').count() > MAX_DEPTH + 1 {
                return Err(bad(format!("{shown}: nested more than {MAX_DEPTH} levels")));
            }
            if entries.contains_key(&path) {
                return Err(bad(format!("{shown} is named twice")));
            }
            if let Some((parent, _)) = path.rsplit_once('/')
                && !matches!(entries.get(parent), Some(None))
            {
                return Err(bad(format!("{shown} comes before its directory {parent}")));
            }
            match entry.header().entry_type() {
                tar::EntryType::Directory => {
                    entries.insert(path, None);
                }
                tar::EntryType::Regular => {
                    let size = entry.header().size().map_err(|e| bad(format!("{shown}: {e}")))?;
                    if total + size > MAX_TOTAL_BYTES {
                        return Err(bad(format!("more than {} of files", super::size_text(MAX_TOTAL_BYTES))));
                    }
                    let mut file = Vec::with_capacity(size as usize);
                    (&mut entry).take(size).read_to_end(&mut file).map_err(|e| bad(format!("{shown}: {e}")))?;
                    total += file.len() as u64;
                    entries.insert(path, Some(file));
                }
                other => return Err(bad(format!("{shown} is not a regular file or a directory ({other:?}; refused)"))),
            }
        }
        Ok(Tree { entries: entries.into_iter().collect() })
    }
}

/// [`Tree::sha256_without`] from the entries [`Tree::hashed`] gave.
pub fn pin(hashed: &[(String, Option<(usize, String)>)], skip: &str) -> String {
    let lines: Vec<String> = hashed
        .iter()
        .filter(|(p, _)| p != skip)
        .map(|(p, file)| match file {
            Some((_, sha256)) => format!("{p}\0file\0{sha256}"),
            None => format!("{p}\0dir"),
        })
        .collect();
    super::sha256_hex(lines.join("\n").as_bytes())
}

/// Read the file `rel` below `dir` (the directory itself may be reached through links; nothing below
/// it is followed): a regular file of at most `max_bytes`.
pub fn read_below(dir: &Path, rel: &str, max_bytes: u64) -> Result<Vec<u8>, HostError> {
    let rel_path =
        normalize(Path::new(rel)).ok_or_else(|| HostError::refused(format!("{rel:?} is not a path inside {}", dir.display())))?;
    let root = fsroot::Dir::open_ambient(dir).map_err(refused)?;
    let file = root.open_regular(&rel_path).map_err(refused)?;
    super::read_opened(file, &dir.join(&rel_path), max_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_tree_and_refuses_links_and_specials() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        std::fs::create_dir_all(t.join("sub")).unwrap();
        std::fs::write(t.join("type.conf"), "name=t\n").unwrap();
        std::fs::write(t.join("sub/a.md"), "a").unwrap();
        let tree = read(&t).unwrap();
        assert_eq!(tree.entries.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(), ["sub", "sub/a.md", "type.conf"]);
        assert_eq!(tree.file(Path::new("./sub//a.md")), Some(&b"a"[..]));
        assert_eq!(tree.file(Path::new("sub")), None);
        let before = tree.sha256_without("type.conf");
        // The pin's format is what trust files already hold: kept exactly.
        let a = crate::plugin::sha256_hex(b"a");
        assert_eq!(before, crate::plugin::sha256_hex(format!("sub\0dir\nsub/a.md\0file\0{a}").as_bytes()));
        assert_eq!(tree.hashed()[1], ("sub/a.md".to_owned(), Some((1, a))));
        std::fs::write(t.join("type.conf"), "name=changed\n").unwrap();
        assert_eq!(read(&t).unwrap().sha256_without("type.conf"), before, "type.conf is pinned apart");
        std::fs::write(t.join("sub/a.md"), "b").unwrap();
        assert_ne!(read(&t).unwrap().sha256_without("type.conf"), before);
        assert_eq!(read_below(&t, "sub/a.md", 10).unwrap(), b"b");
        assert!(read_below(&t, "sub/a.md", 0).unwrap_err().message.ends_with("sub/a.md: larger than 0 bytes"));
        assert!(read_below(&t, "../t/sub/a.md", 10).is_err());

        let secret = dir.path().join("secret");
        std::fs::write(&secret, "secret").unwrap();
        std::os::unix::fs::symlink(&secret, t.join("sub/link.md")).unwrap();
        assert!(read(&t).unwrap_err().message.contains("sub/link.md is a symbolic link"));
        assert!(read_below(&t, "sub/link.md", 100).unwrap_err().message.contains("symbolic link"));
        std::fs::remove_file(t.join("sub/link.md")).unwrap();
        std::os::unix::fs::symlink(dir.path(), t.join("up")).unwrap();
        assert!(read(&t).unwrap_err().message.contains("symbolic link"));
        assert!(read_below(&t, "up/secret", 100).unwrap_err().message.contains("symbolic link"));
        std::fs::remove_file(t.join("up")).unwrap();

        let linked = dir.path().join("linked");
        std::os::unix::fs::symlink(&t, &linked).unwrap();
        assert!(read(&linked).unwrap_err().message.contains("symbolic link"), "the directory itself may not be a link");

        let many = dir.path().join("many");
        std::fs::create_dir_all(many.join("sub")).unwrap();
        for i in 0..MAX_ENTRIES {
            std::fs::write(many.join("sub").join(i.to_string()), "").unwrap();
        }
        assert!(read(&many).unwrap_err().message.contains(&format!("more than {MAX_ENTRIES} files")));

        assert!(std::process::Command::new("mkfifo").arg(t.join("fifo")).status().unwrap().success());
        assert!(read(&t).unwrap_err().message.contains("not a regular file or a directory"));
    }

    #[test]
    fn a_tree_goes_through_a_tar_and_a_strangers_tar_is_checked() {
        let tree = Tree {
            entries: vec![("sub".into(), None), ("sub/a.md".into(), Some(b"a".to_vec())), ("type.conf".into(), Some(b"name=t\n".to_vec()))],
        };
        let tar = tree.to_tar();
        assert_eq!(tree.to_tar(), tar, "the same tree, the same bytes");
        let back = Tree::from_tar(&tar, "t").unwrap();
        assert_eq!(back.entries, tree.entries);

        let one = |path: &str, kind: tar::EntryType, body: &[u8]| {
            let mut b = tar::Builder::new(Vec::new());
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(kind);
            h.set_size(body.len() as u64);
            h.set_mode(0o644);
            if kind == tar::EntryType::Symlink {
                h.set_link_name("/etc/passwd").unwrap();
            }
            // Written raw: the tar crate's own checks would refuse some of these paths.
            let name = path.as_bytes();
            h.as_old_mut().name[..name.len()].copy_from_slice(name);
            h.set_cksum();
            b.append(&h, body).unwrap();
            b.into_inner().unwrap()
        };
        for (path, kind, why) in [
            ("../escape", tar::EntryType::Regular, "not a path inside"),
            ("/etc/x", tar::EntryType::Regular, "not a path inside"),
            ("link", tar::EntryType::Symlink, "not a regular file or a directory"),
            ("dev", tar::EntryType::Char, "not a regular file or a directory"),
            ("a/b", tar::EntryType::Regular, "comes before its directory a"),
            ("a/b/c/d/e/f", tar::EntryType::Regular, "nested more than"),
            ("\u{1b}]2;x\u{7}", tar::EntryType::Symlink, "\\u{1b}"),
        ] {
            let e = Tree::from_tar(&one(path, kind, b"x"), "t").unwrap_err().message;
            assert!(e.contains(why), "{path:?}: {e}");
            assert!(!e.contains('\u{1b}'), "{e:?}");
        }
        let mut twice = tree.to_tar();
        twice.truncate(twice.len() - 1024);
        twice.extend_from_slice(&one("type.conf", tar::EntryType::Regular, b"x"));
        assert!(Tree::from_tar(&twice, "t").unwrap_err().message.contains("type.conf is named twice"));
        assert!(Tree::from_tar(&[7u8; 1024], "t").unwrap_err().message.contains("not a tar"));
    }
}
