//! The sampler's epochs: which kept rows each epoch takes and in which order, drawn as data_io
//! draws them, written as `epoch_<n>/<field>.npy` int64 arrays with each array's SHA-256.
//!
//! One Philox generator, used in data_io's order: per epoch, each task in turn takes its rows
//! from a permutation of its own rows, drawing a new permutation only when it needs rows and
//! the current one is used up (so a task's walk carries over from epoch to epoch); then the
//! epoch's rows are shuffled with one more permutation.

use std::fs;
use std::path::Path;

use crate::error::{Error, IoContext, Result};
use crate::npy::HashedNpyWriter;
use crate::sample::philox::Philox;

/// One task's kept rows (consecutive in the table, after the previous task's) and how many of
/// them an epoch takes (more than it has when the task is repeated).
#[derive(Clone, Copy, Debug)]
pub struct TaskRows {
    pub rows: u64,
    pub per_epoch: u64,
}

/// Fields an epoch is written as: data_io's four spans (`inst_start`, `inst_len`, `resp_start`,
/// `resp_len`). A fixed number lets a drawn row be gathered as one 32-byte value.
pub const FIELDS: usize = 4;

/// Every kept row of every task: one value per row for each field written, and its tokens.
pub struct RowTable<'a> {
    pub fields: [(&'a str, &'a [i64]); FIELDS],
    pub lengths: &'a [i64],
    pub tasks: &'a [TaskRows],
}

/// One array written: its path relative to the output folder, size and SHA-256.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WrittenArray {
    pub relative: String,
    pub size: u64,
    pub sha256: String,
}

#[derive(Debug, Default)]
pub struct Epochs {
    /// The tokens (instruction + response) of each epoch's rows, summed with wrap-around as
    /// numpy's int64 arithmetic does.
    pub tokens: Vec<i64>,
    pub written: Vec<WrittenArray>,
}

impl RowTable<'_> {
    fn check(&self, hits: &[i64]) -> Result<()> {
        let rows = self.lengths.len();
        let task_rows: u64 = self.tasks.iter().map(|task| task.rows).sum();
        if task_rows != rows as u64 || hits.len() != rows {
            return Err(Error::Config(format!(
                "the tasks have {task_rows} rows, the table {rows} and the draw counts {}",
                hits.len()
            )));
        }
        if let Some((name, values)) = self.fields.iter().find(|(_, values)| values.len() != rows) {
            return Err(Error::Config(format!(
                "field {name} has {} rows, the table {rows}",
                values.len()
            )));
        }
        let epoch_rows: u64 = self.tasks.iter().map(|task| task.per_epoch).sum();
        if rows as u64 > MAX_ROWS || epoch_rows > MAX_ROWS {
            return Err(Error::Config(format!(
                "{rows} rows, {epoch_rows} per epoch: at most {MAX_ROWS} each"
            )));
        }
        if let Some(index) = self
            .tasks
            .iter()
            .position(|task| task.rows == 0 && task.per_epoch > 0)
        {
            return Err(Error::Config(format!(
                "task {index} has no rows but takes {} per epoch",
                self.tasks[index].per_epoch
            )));
        }
        Ok(())
    }
}

/// A task's walk through successive permutations of its rows.
#[derive(Default)]
struct Cursor {
    permutation: Vec<u32>,
    position: usize,
}

/// Rows gathered, hashed and written at a time: 256 KiB of rows, 64 KiB per field.
const CHUNK_ROWS: usize = 1 << 13;

/// Rows (of a task, of the table, of an epoch) are indexed with 32 bits.
pub const MAX_ROWS: u64 = u32::MAX as u64;

/// Draw `epochs` epochs from `rng` and write each one's fields under `output/epoch_<n>/`.
/// `hits` (one per table row, added to) counts how often each row was drawn; `progress` is
/// called after each epoch and answers whether to go on (`false` stops with an error).
pub fn write_epochs(
    output: &Path,
    table: &RowTable<'_>,
    epochs: usize,
    rng: &mut Philox,
    hits: &mut [i64],
    progress: &mut dyn FnMut() -> bool,
) -> Result<Epochs> {
    table.check(hits)?;
    let epoch_rows: u64 = table.tasks.iter().map(|task| task.per_epoch).sum();
    let epoch_rows = epoch_rows as usize;
    // Row-major, so gathering a drawn row's fields costs one cache miss, not one per field.
    let mut by_row: Vec<[i64; FIELDS]> = vec![[0; FIELDS]; table.lengths.len()];
    for (field, (_, values)) in table.fields.iter().enumerate() {
        for (row, value) in by_row.iter_mut().zip(values.iter()) {
            row[field] = *value;
        }
    }
    let mut cursors: Vec<Cursor> = table.tasks.iter().map(|_| Cursor::default()).collect();
    let mut picked: Vec<u32> = Vec::with_capacity(epoch_rows);
    let mut order: Vec<u32> = Vec::with_capacity(epoch_rows);
    let mut shuffled: Vec<u32> = Vec::with_capacity(epoch_rows);
    let mut gathered: Vec<[i64; FIELDS]> = Vec::with_capacity(CHUNK_ROWS);
    let mut column: Vec<i64> = Vec::with_capacity(CHUNK_ROWS);
    let mut done = Epochs::default();
    for epoch in 0..epochs {
        picked.clear();
        let mut base = 0u32;
        for (task, cursor) in table.tasks.iter().zip(&mut cursors) {
            let mut remaining = task.per_epoch as usize;
            while remaining > 0 {
                if cursor.position >= cursor.permutation.len() {
                    rng.permutation_u32_into(task.rows as usize, &mut cursor.permutation);
                    cursor.position = 0;
                }
                let step = remaining.min(cursor.permutation.len() - cursor.position);
                let taken = &cursor.permutation[cursor.position..cursor.position + step];
                picked.extend(taken.iter().map(|row| row + base));
                cursor.position += step;
                remaining -= step;
            }
            base += task.rows as u32;
        }
        let mut tokens = 0i64;
        for &row in &picked {
            hits[row as usize] += 1;
            tokens = tokens.wrapping_add(table.lengths[row as usize]);
        }
        done.tokens.push(tokens);
        rng.permutation_u32_into(picked.len(), &mut order);
        // In two passes, so that neither waits on the other's cache misses.
        shuffled.clear();
        shuffled.extend(order.iter().map(|&at| picked[at as usize]));

        let folder = output.join(format!("epoch_{epoch}"));
        fs::create_dir(&folder).at(&folder)?;
        let mut writers = table
            .fields
            .iter()
            .map(|(name, _)| {
                HashedNpyWriter::<i64>::create(
                    &folder.join(format!("{name}.npy")),
                    epoch_rows as u64,
                )
            })
            .collect::<Result<Vec<_>>>()?;
        // A chunk of rows at a time, so each piece is hashed and written while in cache.
        for rows in shuffled.chunks(CHUNK_ROWS) {
            gathered.clear();
            gathered.extend(rows.iter().map(|&row| by_row[row as usize]));
            for (field, writer) in writers.iter_mut().enumerate() {
                column.clear();
                column.extend(gathered.iter().map(|row| row[field]));
                writer.append(&column)?;
            }
        }
        for ((name, _), writer) in table.fields.iter().zip(writers) {
            let (size, sha256) = writer.finish()?;
            done.written.push(WrittenArray {
                relative: format!("epoch_{epoch}/{name}.npy"),
                size,
                sha256,
            });
        }
        if !progress() {
            return Err(Error::Config("the epoch draw was stopped".into()));
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::npy::HEADER_LEN;
    use crate::sample::philox::seeded_zero as rng;

    fn read_i64s(path: &Path) -> Vec<i64> {
        fs::read(path).unwrap()[HEADER_LEN..]
            .chunks(8)
            .map(|chunk| i64::from_le_bytes(chunk.try_into().unwrap()))
            .collect()
    }

    /// The same draw written out longhand, with the generator's public calls only.
    fn reference(tasks: &[TaskRows], epochs: usize) -> Vec<Vec<u64>> {
        let mut rng = rng();
        let mut walks: Vec<(Vec<u64>, usize)> = tasks.iter().map(|_| (Vec::new(), 0)).collect();
        let mut out = Vec::new();
        for _ in 0..epochs {
            let mut picked = Vec::new();
            let mut base = 0;
            for (task, (permutation, position)) in tasks.iter().zip(&mut walks) {
                for _ in 0..task.per_epoch {
                    if *position == permutation.len() {
                        *permutation = rng.permutation(task.rows as usize);
                        *position = 0;
                    }
                    picked.push(base + permutation[*position]);
                    *position += 1;
                }
                base += task.rows;
            }
            let order = rng.permutation(picked.len());
            out.push(order.iter().map(|&at| picked[at as usize]).collect());
        }
        out
    }

    #[test]
    fn epochs_follow_the_draw_and_count_every_hit() {
        // Capped, whole, repeated past its rows, and empty tasks.
        let tasks = [
            TaskRows {
                rows: 5,
                per_epoch: 2,
            },
            TaskRows {
                rows: 3,
                per_epoch: 3,
            },
            TaskRows {
                rows: 2,
                per_epoch: 5,
            },
            TaskRows {
                rows: 0,
                per_epoch: 0,
            },
        ];
        let ids: Vec<i64> = (0..10).map(|row| 100 + row).collect();
        let lengths: Vec<i64> = (0..10).map(|row| row % 4 + 1).collect();
        let table = RowTable {
            fields: [("id", &ids), ("len", &lengths), ("a", &ids), ("b", &ids)],
            lengths: &lengths,
            tasks: &tasks,
        };
        let dir = tempfile::tempdir().unwrap();
        let mut hits = vec![0i64; 10];
        let mut calls = 0;
        let done = write_epochs(dir.path(), &table, 3, &mut rng(), &mut hits, &mut || {
            calls += 1;
            true
        })
        .unwrap();
        assert_eq!(calls, 3);
        let expected = reference(&tasks, 3);
        let mut counted = vec![0i64; 10];
        for (epoch, rows) in expected.iter().enumerate() {
            let folder = dir.path().join(format!("epoch_{epoch}"));
            let got = read_i64s(&folder.join("id.npy"));
            assert_eq!(
                got,
                rows.iter().map(|&row| 100 + row as i64).collect::<Vec<_>>()
            );
            let tokens: i64 = rows.iter().map(|&row| lengths[row as usize]).sum();
            assert_eq!(done.tokens[epoch], tokens);
            rows.iter().for_each(|&row| counted[row as usize] += 1);
        }
        assert_eq!(hits, counted);
        assert_eq!(done.written.len(), 12);
        assert_eq!(done.written[1].relative, "epoch_0/len.npy");
        let bytes = fs::read(dir.path().join("epoch_2/len.npy")).unwrap();
        assert_eq!(done.written[9].size, bytes.len() as u64);
        assert_eq!(
            read_i64s(&dir.path().join("epoch_1/len.npy")),
            expected[1]
                .iter()
                .map(|&row| lengths[row as usize])
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn epochs_of_several_chunks_are_written_whole() {
        let rows = CHUNK_ROWS as u64 * 2 + 7;
        let tasks = [TaskRows {
            rows,
            per_epoch: rows + 3,
        }];
        let ids: Vec<i64> = (0..rows as i64).collect();
        let table = RowTable {
            fields: [("id", &ids), ("neg", &ids), ("c", &ids), ("d", &ids)],
            lengths: &ids,
            tasks: &tasks,
        };
        let dir = tempfile::tempdir().unwrap();
        let mut hits = vec![0i64; rows as usize];
        write_epochs(dir.path(), &table, 2, &mut rng(), &mut hits, &mut || true).unwrap();
        for (epoch, expected) in reference(&tasks, 2).iter().enumerate() {
            let got = read_i64s(&dir.path().join(format!("epoch_{epoch}/id.npy")));
            assert_eq!(
                got,
                expected.iter().map(|&row| row as i64).collect::<Vec<_>>()
            );
        }
        assert_eq!(hits.iter().sum::<i64>(), 2 * (rows as i64 + 3));
    }

    #[test]
    fn mismatched_tables_and_rowless_draws_are_refused() {
        let lengths = [1i64, 2];
        let dir = tempfile::tempdir().unwrap();
        let mut go_on = || true;
        let short = RowTable {
            fields: [
                ("x", &lengths[..1]),
                ("y", &lengths),
                ("z", &lengths),
                ("w", &lengths),
            ],
            lengths: &lengths,
            tasks: &[TaskRows {
                rows: 2,
                per_epoch: 1,
            }],
        };
        let err = write_epochs(dir.path(), &short, 1, &mut rng(), &mut [0; 2], &mut go_on);
        assert!(err.unwrap_err().to_string().contains("field x has 1 rows"));
        let rowless = RowTable {
            fields: [("x", &lengths); FIELDS],
            lengths: &lengths,
            tasks: &[
                TaskRows {
                    rows: 2,
                    per_epoch: 1,
                },
                TaskRows {
                    rows: 0,
                    per_epoch: 1,
                },
            ],
        };
        let err = write_epochs(dir.path(), &rowless, 1, &mut rng(), &mut [0; 2], &mut go_on);
        assert!(err.unwrap_err().to_string().contains("task 1 has no rows"));
    }

    #[test]
    fn a_false_progress_stops_after_the_epoch() {
        let lengths = [1i64, 2];
        let table = RowTable {
            fields: [("x", &lengths); FIELDS],
            lengths: &lengths,
            tasks: &[TaskRows {
                rows: 2,
                per_epoch: 2,
            }],
        };
        let dir = tempfile::tempdir().unwrap();
        let result = write_epochs(dir.path(), &table, 5, &mut rng(), &mut [0; 2], &mut || {
            false
        });
        assert!(result.is_err());
        assert!(dir.path().join("epoch_0").is_dir());
        assert!(!dir.path().join("epoch_1").exists());
    }

    #[test]
    fn a_write_error_is_reported_and_ends_the_draw() {
        // Epochs of several chunks, so the draw is ahead of the writer when the writer fails.
        let rows = 5 * CHUNK_ROWS;
        let values: Vec<i64> = (0..rows as i64).collect();
        let table = RowTable {
            fields: [
                ("a", &values),
                ("b", &values),
                ("c", &values),
                ("d", &values),
            ],
            lengths: &values,
            tasks: &[TaskRows {
                rows: rows as u64,
                per_epoch: rows as u64,
            }],
        };
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("epoch_1"), b"in the way").unwrap();
        let mut epochs_drawn = 0;
        let err = write_epochs(
            dir.path(),
            &table,
            4,
            &mut rng(),
            &mut vec![0; rows],
            &mut || {
                epochs_drawn += 1;
                true
            },
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains(&dir.path().join("epoch_1").display().to_string()),
            "{err}"
        );
        assert!(
            epochs_drawn < 4,
            "the draw went on after the writer stopped"
        );
        assert_eq!(read_i64s(&dir.path().join("epoch_0/a.npy")).len(), rows);
    }
}
