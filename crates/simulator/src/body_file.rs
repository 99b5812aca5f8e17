//! Reading a recipe's `body_file`, bounded in size, and for recipes posted over the
//! admin API confined to the operator's files directory.
//!
//! The operator's own recipe (a file on the command line, or a [`crate::Recipe`] handed
//! to the library) may name any file, read at most up to the body cap (so `/dev/zero`
//! or a FIFO fed forever is refused, not swallowed). A posted recipe comes from whoever
//! can reach `/_admin`, so it may name only regular files inside
//! [`crate::SimulatorOptions::files_dir`]: no `..`, no absolute path outside, and no
//! symlink leading out (checked on the resolved path and again on the opened file).

use std::fs::File;
use std::io::Read;
use std::path::{Component, Path};

/// Where a recipe's files may come from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FileAccess<'a> {
    /// The operator's recipe: any path, as written (already resolved against the
    /// recipe file's directory by the parser).
    Operator,
    /// A posted recipe: only inside this canonical directory, if any.
    Confined(Option<&'a Path>),
}

/// Reads at most `limit_bytes` of `path`; more is an error, as is a file the access
/// rules refuse. Messages quote the path as written, never where it resolved to.
pub(crate) fn read_body_file(
    path: &Path,
    access: FileAccess<'_>,
    limit_bytes: u64,
) -> Result<Vec<u8>, String> {
    let file = match access {
        FileAccess::Operator => {
            File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?
        }
        FileAccess::Confined(None) => {
            return Err(format!(
                "{}: recipes posted to /_admin/add_recipe may not name files unless simulate runs with -files DIR",
                path.display()
            ));
        }
        FileAccess::Confined(Some(dir)) => open_confined(dir, path)?,
    };
    let mut bytes = Vec::new();
    file.take(limit_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if bytes.len() as u64 > limit_bytes {
        return Err(format!(
            "{}: larger than the {} this body may hold (simulate -max-body-size, -max-recipe-memory)",
            path.display(),
            crate::duration_size::format_size(limit_bytes)
        ));
    }
    Ok(bytes)
}

/// Opens `path` (relative to `dir`, or absolute inside it) if it is a regular file
/// inside `dir` once every symlink is resolved.
fn open_confined(dir: &Path, path: &Path) -> Result<File, String> {
    let shown = path.display();
    let outside = || format!("{shown}: outside the -files directory");
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(format!(
            "{shown}: \"..\" is not allowed in a posted body_file"
        ));
    }
    // Checked before touching the file system, so a posted recipe cannot even learn
    // whether a file outside the directory exists.
    if path.is_absolute() && !path.starts_with(dir) {
        return Err(outside());
    }
    let real = dir
        .join(path)
        .canonicalize()
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !real.starts_with(dir) {
        return Err(outside());
    }
    // Not a FIFO (open would block forever) nor a device (endless).
    if !std::fs::metadata(&real).is_ok_and(|m| m.is_file()) {
        return Err(format!("{shown}: not a regular file"));
    }
    let file = File::open(&real).map_err(|e| format!("cannot read {shown}: {e}"))?;
    // A directory on the way could have been swapped for a symlink since the check:
    // ask the kernel where the opened file really is.
    if let Ok(opened) = std::fs::read_link(opened_path(&file))
        && !opened.starts_with(dir)
    {
        return Err(outside());
    }
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err(format!("{shown}: not a regular file"));
    }
    Ok(file)
}

fn opened_path(file: &File) -> String {
    use std::os::fd::AsRawFd;
    format!("/proc/self/fd/{}", file.as_raw_fd())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confined_reads_stay_inside_the_directory() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("files");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("a.txt"), "inside").unwrap();
        std::fs::write(dir.join("sub/b.txt"), "deeper").unwrap();
        std::fs::write(root.path().join("secret.txt"), "outside").unwrap();
        std::os::unix::fs::symlink(root.path().join("secret.txt"), dir.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(root.path(), dir.join("up")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero")).unwrap();
        let dir = dir.canonicalize().unwrap();
        let inside_abs = dir.join("a.txt");
        let access = FileAccess::Confined(Some(&dir));
        type Row<'a> = (&'a Path, Result<&'a str, &'a str>);
        let rows: &[Row<'_>] = &[
            (Path::new("a.txt"), Ok("inside")),
            (Path::new("sub/b.txt"), Ok("deeper")),
            (Path::new("./sub/../a.txt"), Err("\"..\" is not allowed")),
            (Path::new("../secret.txt"), Err("\"..\" is not allowed")),
            (
                Path::new("/etc/passwd"),
                Err("outside the -files directory"),
            ),
            (inside_abs.as_path(), Ok("inside")),
            (Path::new("link.txt"), Err("outside the -files directory")),
            (
                Path::new("up/secret.txt"),
                Err("outside the -files directory"),
            ),
            (Path::new("zero"), Err("outside the -files directory")),
            (Path::new("sub"), Err("not a regular file")),
            (Path::new("missing.txt"), Err("cannot read missing.txt")),
        ];
        for (path, want) in rows {
            match (read_body_file(path, access, 1024), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want.as_bytes(), "{}", path.display()),
                (Err(got), Err(want)) => {
                    assert!(got.contains(want), "{}: {got}", path.display());
                    assert!(
                        !got.contains(&*root.path().to_string_lossy()) || path.is_absolute(),
                        "{got}"
                    );
                }
                (got, want) => panic!("{}: got {got:?}, want {want:?}", path.display()),
            }
        }
        let refused = read_body_file(Path::new("a.txt"), FileAccess::Confined(None), 1024);
        assert!(refused.unwrap_err().contains("-files DIR"));
    }

    #[test]
    fn reads_are_bounded() {
        let endless = read_body_file(Path::new("/dev/zero"), FileAccess::Operator, 4096);
        assert!(endless.unwrap_err().contains("larger than the 4kb"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ten");
        std::fs::write(&path, "0123456789").unwrap();
        assert_eq!(
            read_body_file(&path, FileAccess::Operator, 10)
                .unwrap()
                .len(),
            10
        );
        assert!(read_body_file(&path, FileAccess::Operator, 9).is_err());
    }
}
