//! Where a file sits in its package: the dotted module name Python would give it, from the
//! `__init__.py` files of the folders above it. A folder without one inside a package is a
//! namespace portion (PEP 420: SGLang's `sglang/srt` has no `__init__.py`) and still names its
//! modules; the search stops at a project root (`pyproject.toml`, `setup.py`, `.git`).

use crate::ModuleInfo;
use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};

/// Dotted package names of folders, computed once per folder.
#[derive(Default)]
pub(super) struct PackageCache {
    packages: FxHashMap<PathBuf, Option<String>>,
}

impl PackageCache {
    fn package_of(&mut self, dir: &Path) -> Option<String> {
        if let Some(known) = self.packages.get(dir) {
            return known.clone();
        }
        let is_package = dir.join("__init__.py").is_file();
        let is_root = ["pyproject.toml", "setup.py", "setup.cfg", ".git"]
            .iter()
            .any(|marker| dir.join(marker).exists());
        let package = if is_root && !is_package {
            None
        } else {
            let name = dir.file_name()?.to_string_lossy().to_string();
            let absolute = std::path::absolute(dir).ok();
            let parent = absolute
                .as_deref()
                .and_then(Path::parent)
                .map(Path::to_path_buf);
            let parent = if is_root {
                None
            } else {
                parent.and_then(|parent| self.package_of(&parent))
            };
            match parent {
                Some(parent) => Some(format!("{parent}.{name}")),
                // A namespace folder names modules only inside a package.
                None => is_package.then_some(name),
            }
        };
        self.packages.insert(dir.to_path_buf(), package.clone());
        package
    }

    pub(super) fn module_of(&mut self, file: &Path) -> ModuleInfo {
        let absolute = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
        let Some(dir) = absolute.parent() else {
            return ModuleInfo::default();
        };
        let stem = file.file_stem().map(|s| s.to_string_lossy().to_string());
        let is_package = stem.as_deref() == Some("__init__");
        let package = self.package_of(dir);
        let name = match (package, stem) {
            (Some(package), _) if is_package => Some(package),
            (Some(package), Some(stem)) => Some(format!("{package}.{stem}")),
            (None, Some(stem)) if !is_package => Some(stem),
            _ => None,
        };
        ModuleInfo { name, is_package }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_are_named_from_their_packages() {
        let dir = tempfile::tempdir().unwrap();
        let package = dir.path().join("engine").join("model");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::write(dir.path().join("engine/__init__.py"), "").unwrap();
        std::fs::write(package.join("__init__.py"), "").unwrap();
        let mut cache = PackageCache::default();
        let layer = cache.module_of(&package.join("layer.py"));
        assert_eq!(layer.name.as_deref(), Some("engine.model.layer"));
        assert!(!layer.is_package);
        let init = cache.module_of(&package.join("__init__.py"));
        assert_eq!(init.name.as_deref(), Some("engine.model"));
        assert!(init.is_package);
        // Outside any package, a file is a top-level module.
        let script = cache.module_of(&dir.path().join("run.py"));
        assert_eq!(script.name.as_deref(), Some("run"));
        // A folder without `__init__.py` inside a package is a namespace portion.
        let portion = dir.path().join("engine/srt/runner");
        std::fs::create_dir_all(&portion).unwrap();
        let runner = cache.module_of(&portion.join("model_runner.py"));
        assert_eq!(
            runner.name.as_deref(),
            Some("engine.srt.runner.model_runner")
        );
    }
}
