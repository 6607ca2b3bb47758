//! The layout the development section of the README promises: no hand-written source file over
//! 600 lines (a file's `#[cfg(test)]` module aside), so that each file stays one idea a reader
//! can hold.

use std::path::{Path, PathBuf};

const MAX_LINES: usize = 600;

fn rust_sources(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_sources(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

/// Lines before the file's test module, if it has one.
fn code_lines(source: &str) -> usize {
    source
        .lines()
        .position(|line| line.trim() == "#[cfg(test)]")
        .unwrap_or_else(|| source.lines().count())
}

#[test]
fn no_source_file_is_over_600_lines() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in std::fs::read_dir(&crates).expect("crates folder").flatten() {
        rust_sources(&krate.path().join("src"), &mut files);
    }
    assert!(files.len() > 50, "found only {} source files", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let source = std::fs::read_to_string(path).ok()?;
            let lines = code_lines(&source);
            (lines > MAX_LINES).then(|| format!("{} ({lines} lines)", path.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "source files over {MAX_LINES} lines (split them by idea):\n{}",
        long.join("\n")
    );
}
