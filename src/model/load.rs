//! Texts in, one [`Model`] out: the pure half of loading. Each `(name, text)` pair is parsed by
//! [`yaml`](super::yaml) and its objects go into a [`ModelBuilder`](super::insert::ModelBuilder), where a
//! duplicate takes the later definition and becomes a warning naming both places. Sources read bytes from wherever they live (the directory
//! walk in `source::files`, a test's string) and hand the texts here, so every entry point — `pier serve`,
//! `pier translate`, goldens, benches — builds its model the same way.

use std::path::PathBuf;

use super::Model;
use super::insert::ModelBuilder;
use super::yaml::{self, ParseError, Warning};

/// A complete model, plus what the parser skipped and which inputs it read (in reading order).
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    pub model: Model,
    pub warnings: Vec<Warning>,
    /// Shared: a directory source hands the same list on until a file comes or goes.
    pub files: std::sync::Arc<Vec<PathBuf>>,
}

/// Why a set of texts does not make a model; the message names the input (and document) at fault.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Parse(#[from] ParseError),
}

/// Builds a model from texts added one input at a time.
#[derive(Debug, Default)]
pub struct Loader {
    builder: ModelBuilder,
    warnings: Vec<Warning>,
    files: Vec<PathBuf>,
}

impl Loader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses `text` as if it were the file `name` and adds its objects.
    pub fn add(&mut self, name: &str, text: &str) -> Result<(), LoadError> {
        self.add_parsed(name, yaml::parse(name, text)?)
    }

    /// Adds the objects of the file `name`, parsed already (by a parallel reader).
    pub fn add_parsed(&mut self, name: &str, parsed: yaml::Parsed) -> Result<(), LoadError> {
        let mut duplicates = Vec::new();
        for (doc, object) in parsed.objects {
            duplicates.extend(self.builder.insert(doc, object).map(|d| d.warning()));
        }
        // The file's own warnings first, then its duplicates: the order the directory cache reports.
        self.warnings.extend(parsed.warnings);
        self.warnings.extend(duplicates);
        self.files.push(PathBuf::from(name));
        Ok(())
    }

    pub fn finish(self) -> Loaded {
        Loaded {
            model: self.builder.finish(),
            warnings: self.warnings,
            files: std::sync::Arc::new(self.files),
        }
    }
}

/// Loads (name, text) pairs as if each were a file called `name`.
pub fn parse_texts(inputs: &[(String, String)]) -> Result<Loaded, LoadError> {
    let mut loader = Loader::new();
    for (name, text) in inputs {
        loader.add(name, text)?;
    }
    Ok(loader.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(name: &str) -> String {
        format!("apiVersion: v1\nkind: Service\nmetadata: {{name: {name}}}\n")
    }

    #[test]
    fn texts_load_like_files() {
        let inputs = [
            ("one.yaml".to_string(), svc("a")),
            (
                "two.yaml".to_string(),
                "apiVersion: x/v1\nkind: Foo\nmetadata: {name: f}\n".to_string(),
            ),
        ];
        let loaded = parse_texts(&inputs).unwrap();
        assert_eq!(loaded.model.services.len(), 1);
        assert_eq!(loaded.warnings.len(), 1);
        assert_eq!(*loaded.files, [PathBuf::from("one.yaml"), PathBuf::from("two.yaml")]);
        let dup = parse_texts(&[("one.yaml".into(), svc("a")), ("two.yaml".into(), svc("a"))]).unwrap();
        assert_eq!(dup.model.services.len(), 1);
        assert!(dup.warnings[0].message.contains("defined twice"), "{:?}", dup.warnings);
    }
}
