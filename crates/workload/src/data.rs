//! [`DataTable`]: rows of a CSV file (`-data users.csv`) that `{{csv.COLUMN}}`
//! placeholders read, one row per request, in order or at random.

use std::io::Read;

use crate::WorkloadError;
use crate::rng::Rng;

/// Which row a request uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DataOrder {
    /// Request k uses row k mod rows.
    #[default]
    Sequential,
    /// A random row per request (reproducible with `-seed`).
    Random,
}

impl DataOrder {
    /// Reads `sequential` or `random`.
    pub fn parse(text: &str) -> Result<DataOrder, String> {
        match text {
            "sequential" => Ok(DataOrder::Sequential),
            "random" => Ok(DataOrder::Random),
            other => Err(format!(
                "unknown data order {other:?} (want sequential or random)"
            )),
        }
    }
}

/// A CSV file with a header row, held in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataTable {
    source_name: String,
    columns: Vec<String>,
    rows: Vec<Vec<String>>,
    order: DataOrder,
}

impl DataTable {
    /// Reads a CSV with a header row; every row must have as many fields as the header.
    pub fn read(
        input: impl Read,
        source_name: &str,
        order: DataOrder,
    ) -> Result<DataTable, WorkloadError> {
        let fail = |line: u64, reason: String| WorkloadError::Target {
            source_name: source_name.to_owned(),
            line,
            reason,
        };
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(false)
            .from_reader(input);
        let columns: Vec<String> = reader
            .headers()
            .map_err(|err| fail(1, err.to_string()))?
            .iter()
            .map(str::to_owned)
            .collect();
        if columns.iter().any(String::is_empty) {
            return Err(fail(
                1,
                "every column needs a name in the header row".to_owned(),
            ));
        }
        let mut rows = Vec::new();
        for record in reader.records() {
            let record = record.map_err(|err| {
                let line = err.position().map_or(0, csv::Position::line);
                fail(
                    line,
                    format!("{err} (the header has {} columns)", columns.len()),
                )
            })?;
            rows.push(record.iter().map(str::to_owned).collect());
        }
        if rows.is_empty() {
            return Err(fail(1, "no rows after the header".to_owned()));
        }
        Ok(DataTable {
            source_name: source_name.to_owned(),
            columns,
            rows,
            order,
        })
    }

    /// How many rows the file has (its header aside).
    pub fn rows(&self) -> usize {
        self.rows.len()
    }

    /// Fails naming the first column that is not in the file.
    pub fn check_columns<'a>(
        &self,
        wanted: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), WorkloadError> {
        for column in wanted {
            if !self.columns.iter().any(|c| c == column) {
                return Err(WorkloadError::Target {
                    source_name: self.source_name.clone(),
                    line: 1,
                    reason: format!(
                        "no column {column:?} (columns: {})",
                        self.columns.join(", ")
                    ),
                });
            }
        }
        Ok(())
    }

    /// Column `name` of request `seq`'s row ("" for an unknown column; checked earlier).
    pub fn value(&self, seed: u64, seq: u64, name: &str) -> &str {
        let row = match self.order {
            DataOrder::Sequential => (seq % self.rows.len() as u64) as usize,
            DataOrder::Random => {
                Rng::for_request(seed, seq, u64::MAX).below(self.rows.len() as u64) as usize
            }
        };
        self.columns
            .iter()
            .position(|c| c == name)
            .map_or("", |column| self.rows[row][column].as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_go_in_order_or_at_random() {
        let csv = "user,token\nann,a1\nbob,b2\ncid,c3\n";
        let table = DataTable::read(csv.as_bytes(), "users.csv", DataOrder::Sequential).unwrap();
        let users: Vec<&str> = (0..4).map(|k| table.value(0, k, "user")).collect();
        assert_eq!(users, ["ann", "bob", "cid", "ann"]);
        assert_eq!(table.value(0, 1, "token"), "b2", "one row per request");
        let random = DataTable::read(csv.as_bytes(), "users.csv", DataOrder::Random).unwrap();
        let seen: std::collections::HashSet<&str> =
            (0..100).map(|k| random.value(9, k, "user")).collect();
        assert_eq!(seen.len(), 3);
        assert_eq!(random.value(9, 5, "user"), random.value(9, 5, "user"));
    }

    #[test]
    fn names_bad_files_and_columns() {
        let rows: &[(&str, &str)] = &[
            ("user,token\nann\n", "users.csv:2: "),
            ("user,token\n", "no rows after the header"),
            ("user,\nann,x\n", "every column needs a name"),
        ];
        for (csv, want) in rows {
            let err = DataTable::read(csv.as_bytes(), "users.csv", DataOrder::Sequential)
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{csv:?}: {err}");
        }
        let table =
            DataTable::read("user\nann\n".as_bytes(), "users.csv", DataOrder::Sequential).unwrap();
        let err = table
            .check_columns(["user", "naem"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("users.csv:1: no column \"naem\" (columns: user)"),
            "{err}"
        );
        assert!(DataOrder::parse("shuffled").is_err());
    }
}
