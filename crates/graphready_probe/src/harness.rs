//! The Python harness, embedded in the binary so `graphready probe` works without installing
//! the `graphready` Python package: it is written to a temporary folder for each run.

use std::fs;
use std::io;
use std::path::Path;

macro_rules! harness_files {
    ($($name:literal),* $(,)?) => {
        /// Every module of `python/graphready`, as (file name, source).
        pub const HARNESS_FILES: &[(&str, &str)] = &[
            $(($name, include_str!(concat!("../../../python/graphready/", $name)))),*
        ];
    };
}

harness_files!(
    "__init__.py",
    "__main__.py",
    "_find_bin.py",
    "_version.py",
    "bucket.py",
    "compare.py",
    "dist.py",
    "events.py",
    "frames.py",
    "harness.py",
    "launch.py",
    "phases.py",
    "protocol.py",
    "ranks.py",
    "rows.py",
    "runs.py",
    "state.py",
    "statewatch.py",
    "summary.py",
    "target.py",
    "verdicts.py",
    "watch.py",
    "watchdog.py",
);

/// A temporary folder holding the `graphready` package; removed on drop.
#[derive(Debug)]
pub struct HarnessDir {
    dir: tempfile::TempDir,
}

impl HarnessDir {
    /// Write the embedded harness into a fresh temporary folder.
    pub fn create() -> io::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("graphready-probe-")
            .tempdir()?;
        write_harness(dir.path())?;
        Ok(HarnessDir { dir })
    }

    /// The folder to put on `PYTHONPATH` (it contains `graphready/`).
    pub fn root(&self) -> &Path {
        self.dir.path()
    }
}

/// Write the embedded package as `<root>/graphready/*.py`.
pub fn write_harness(root: &Path) -> io::Result<()> {
    let package = root.join("graphready");
    fs::create_dir_all(&package)?;
    for (name, source) in HARNESS_FILES {
        fs::write(package.join(name), source)?;
    }
    Ok(())
}
