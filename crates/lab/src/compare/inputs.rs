//! The sides of a folder comparison: what the command line named (record files, run
//! folders, `DIR#VARIANT`) and each side's `summary.json`.

use std::path::{Path, PathBuf};

use crate::LabError;
use crate::folder::RunSummary;

/// One side: a whole run folder, or one variant of it (`DIR#VARIANT`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FolderInput {
    /// The run folder.
    pub dir: PathBuf,
    /// The variant picked, or every variant.
    pub variant: Option<String>,
}

impl FolderInput {
    /// The name the output uses: `DIR` or `DIR#VARIANT`.
    pub fn name(&self) -> String {
        match &self.variant {
            Some(variant) => format!("{}#{variant}", self.dir.display()),
            None => self.dir.display().to_string(),
        }
    }
}

/// What the command line named: record files, or run folders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompareArgs {
    /// Record files from `loadlab attack`, compared by `report`.
    RecordFiles(Vec<String>),
    /// Run folders or variants of them.
    Folders(Vec<FolderInput>),
}

/// Sorts the command line's inputs: a folder is a run folder, `DIR#VARIANT` a variant
/// of one (when `DIR` is a folder and no file has that exact name), anything else a
/// record file. Record files and folders do not mix.
pub fn classify(args: &[String]) -> Result<CompareArgs, LabError> {
    let mut files = Vec::new();
    let mut folders = Vec::new();
    for arg in args {
        match folder_input(arg) {
            Some(folder) => folders.push((arg, folder)),
            None => {
                hint_variant_syntax(arg)?;
                files.push(arg.clone());
            }
        }
    }
    match (files.first(), folders.first()) {
        (Some(file), Some((folder, _))) => Err(LabError::Folder(format!(
            "compare takes record files or run folders, not both: {folder} is a folder, {file} is not"
        ))),
        (_, None) => Ok(CompareArgs::RecordFiles(files)),
        (None, Some(_)) => Ok(CompareArgs::Folders(
            folders.into_iter().map(|(_, f)| f).collect(),
        )),
    }
}

fn folder_input(arg: &str) -> Option<FolderInput> {
    let path = Path::new(arg);
    if path.is_dir() {
        return Some(FolderInput {
            dir: path.to_owned(),
            variant: None,
        });
    }
    let (dir, variant) = arg.rsplit_once('#')?;
    (!path.exists() && Path::new(dir).is_dir()).then(|| FolderInput {
        dir: PathBuf::from(dir),
        variant: Some(variant.to_owned()),
    })
}

/// `runs/a/fixed-pool` reads like a variant's folder, but a variant is not one (its
/// steps are `steps/NNN-VARIANT-RATE`): say how to pick it instead of "no such file".
fn hint_variant_syntax(arg: &str) -> Result<(), LabError> {
    let path = Path::new(arg);
    let Some(parent) = path.parent().filter(|p| p.join("summary.json").is_file()) else {
        return Ok(());
    };
    if path.exists() {
        return Ok(());
    }
    let name = path
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    Err(LabError::Folder(format!(
        "{arg}: no such file or folder; to pick variant {name:?} of the run folder {}, write {}#{name}",
        parent.display(),
        parent.display()
    )))
}

/// Reads a run folder's `summary.json`; a missing file or bad JSON names the file (and
/// the line).
pub fn read_summary(dir: &Path) -> Result<RunSummary, LabError> {
    let path = dir.join("summary.json");
    let text = std::fs::read_to_string(&path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            LabError::Folder(format!(
                "{}: not found: {} is not a run folder of `loadlab run`",
                path.display(),
                dir.display()
            ))
        } else {
            LabError::Io {
                path: path.clone(),
                cause: source,
            }
        }
    })?;
    serde_json::from_str(&text).map_err(|err| {
        let message = err.to_string();
        let message = message
            .rsplit_once(" at line ")
            .map_or(message.as_str(), |(m, _)| m);
        LabError::Folder(format!("{}:{}: {message}", path.display(), err.line()))
    })
}

/// One side as compared: its name, its folder's summary and the variant it stands for.
#[derive(Clone, Debug)]
pub struct Side {
    /// `DIR` or `DIR#VARIANT`.
    pub name: String,
    /// The run folder (record paths are relative to it).
    pub dir: PathBuf,
    /// Its `summary.json`.
    pub summary: RunSummary,
    /// The variant picked; None compares the whole folder.
    pub variant: Option<String>,
}

/// Reads every input's summary; a single whole folder becomes each of its variants, the
/// first (the plan's baseline) as A.
pub fn sides(inputs: &[FolderInput]) -> Result<Vec<Side>, LabError> {
    let picked = inputs.iter().filter(|i| i.variant.is_some()).count();
    if picked != 0 && picked != inputs.len() {
        return Err(LabError::Folder(
            "compare takes whole run folders or variants (DIR#VARIANT), not both".to_owned(),
        ));
    }
    let mut sides = Vec::new();
    for input in inputs {
        let summary = read_summary(&input.dir)?;
        if let Some(variant) = &input.variant
            && !summary.variants.iter().any(|v| &v.variant == variant)
        {
            return Err(LabError::Folder(format!(
                "{}: no variant {variant:?} in its summary.json (variants: {})",
                input.dir.display(),
                variant_names(&summary)
            )));
        }
        sides.push(Side {
            name: input.name(),
            dir: input.dir.clone(),
            summary,
            variant: input.variant.clone(),
        });
    }
    match sides.as_slice() {
        [only] if only.variant.is_none() => every_variant(only),
        [_] => Err(LabError::Folder(
            "compare needs at least two inputs (a single run folder compares its variants)"
                .to_owned(),
        )),
        _ => Ok(sides),
    }
}

fn variant_names(summary: &RunSummary) -> String {
    let names: Vec<&str> = summary
        .variants
        .iter()
        .map(|v| v.variant.as_str())
        .collect();
    names.join(", ")
}

fn every_variant(side: &Side) -> Result<Vec<Side>, LabError> {
    if side.summary.variants.len() < 2 {
        return Err(LabError::Folder(format!(
            "{} has one variant ({}): give another run folder to compare it with",
            side.dir.display(),
            variant_names(&side.summary)
        )));
    }
    Ok(side
        .summary
        .variants
        .iter()
        .map(|v| Side {
            name: format!("{}#{}", side.dir.display(), v.variant),
            variant: Some(v.variant.clone()),
            ..side.clone()
        })
        .collect())
}
