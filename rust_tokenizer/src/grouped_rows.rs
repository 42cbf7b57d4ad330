//! Rows of text columns grouped by output and kept for a second pass (the cleaning engine's
//! store, `hrm_assets/cleaning/grouped_store.py`): each group is written in one raw layout,
//! into a spill file at a given position or into a block of memory, straight from the
//! batch's columns in the group's row order (no sorted copy of the batch first); an output's
//! groups are later gathered back into one offsets buffer and one data buffer per column,
//! the text read from the file straight into its place (no copy per group, then a join).
//!
//! A group of `rows` rows holds, for each column in turn, its `rows` end offsets (u64,
//! little-endian, counted from the group's first byte of that column) and then its text:
//! [`group_size`] bytes in all, the sizes of its columns' text kept by the caller.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// One chunk of a text column: Arrow's `rows + 1` offsets into `data`.
pub struct TextChunk<'a> {
    pub offsets: &'a [i64],
    pub data: &'a [u8],
}

/// A text column of a batch, in one chunk or several (batches stored together are not
/// joined first: that would be a copy of their text).
pub struct TextColumn<'a> {
    chunks: Vec<TextChunk<'a>>,
    /// The column's row number of each chunk's first row, then the column's rows.
    starts: Vec<usize>,
}

impl<'a> TextColumn<'a> {
    pub fn new(chunks: Vec<TextChunk<'a>>) -> Self {
        let mut starts = vec![0];
        for chunk in &chunks {
            starts.push(starts.last().unwrap() + chunk.offsets.len().saturating_sub(1));
        }
        Self { chunks, starts }
    }

    pub fn rows(&self) -> usize {
        *self.starts.last().unwrap()
    }

    /// Where row `row`'s value lies: its chunk's data and the value's range in it.
    fn value(&self, row: usize) -> Value<'a> {
        let index = match self.chunks.len() {
            1 => 0,
            _ => self.starts.partition_point(|&start| start <= row) - 1,
        };
        let (chunk, row) = (&self.chunks[index], row - self.starts[index]);
        Value {
            data: chunk.data,
            start: chunk.offsets[row] as usize,
            end: chunk.offsets[row + 1] as usize,
        }
    }
}

/// A value of a text column: `data[start..end]` of its chunk.
#[derive(Clone, Copy)]
struct Value<'a> {
    data: &'a [u8],
    start: usize,
    end: usize,
}

impl<'a> Value<'a> {
    fn bytes(&self) -> &'a [u8] {
        &self.data[self.start..self.end]
    }

    /// `next` taken into this value when it follows it in the same chunk.
    fn extend(&mut self, next: &Value<'a>) -> bool {
        let follows = std::ptr::eq(self.data, next.data) && self.end == next.start;
        if follows {
            self.end = next.end;
        }
        follows
    }
}

/// Bytes of a group of `rows` rows whose columns hold `text` bytes each.
pub fn group_size(rows: usize, text: &[u64]) -> u64 {
    text.iter().map(|bytes| 8 * rows as u64 + bytes).sum()
}

/// The batch's rows of each group in order: group `g` is rows `order[bounds[g]..bounds[g+1]]`
/// (`order` None: the rows themselves, in batch order).
pub struct Groups<'a> {
    pub order: Option<&'a [i64]>,
    pub bounds: &'a [i64],
}

impl Groups<'_> {
    pub fn len(&self) -> usize {
        self.bounds.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn rows(&self, group: usize) -> impl Iterator<Item = usize> + '_ {
        let (start, end) = (self.bounds[group] as usize, self.bounds[group + 1] as usize);
        (start..end).map(move |position| match self.order {
            Some(order) => order[position] as usize,
            None => position,
        })
    }
}

/// Check that `columns` and `groups` describe rows that exist: every column has the same
/// rows, increasing offsets inside its data, and every group's rows are among them.
pub fn check(columns: &[TextColumn], groups: &Groups) -> Result<(), String> {
    let Some(first) = columns.first() else {
        return Err("no column".into());
    };
    let rows = first.rows();
    for (index, column) in columns.iter().enumerate() {
        if column.rows() != rows {
            return Err(format!(
                "column {index} has {} rows, not {rows}",
                column.rows()
            ));
        }
        for chunk in &column.chunks {
            let within = !chunk.offsets.is_empty()
                && chunk.offsets.windows(2).all(|pair| pair[0] <= pair[1])
                && chunk.offsets[0] >= 0
                && *chunk.offsets.last().unwrap() as u64 <= chunk.data.len() as u64;
            if !within {
                return Err(format!(
                    "column {index}'s offsets do not lie within its data"
                ));
            }
        }
    }
    let ordered = groups.bounds.windows(2).all(|pair| pair[0] <= pair[1]);
    let last = groups.bounds.last().copied().unwrap_or(0);
    let positions = groups.order.map_or(rows, <[i64]>::len);
    if groups.bounds.first().is_some_and(|&first| first < 0)
        || !ordered
        || last as usize > positions
    {
        return Err("group bounds must increase within the rows".into());
    }
    if let Some(order) = groups.order {
        if order[..last as usize]
            .iter()
            .any(|&row| row < 0 || row as usize >= rows)
        {
            return Err("the order names a row the columns do not have".into());
        }
    }
    Ok(())
}

/// The groups' bytes in their stored order, as the slices they are made of: each column's
/// end offsets (built here) then its values (borrowed from the batch, where they are; values
/// next to each other in the batch make one slice). One pass over each group's rows, whose
/// positions in the batch are scattered by the grouping.
pub struct GroupLayout<'a> {
    ends: Vec<u8>,
    pieces: Vec<Piece<'a>>,
    sizes: Vec<u64>,
}

enum Piece<'a> {
    /// A range of `ends`.
    Ends(usize, usize),
    Value(Value<'a>),
}

impl<'a> GroupLayout<'a> {
    pub fn new(columns: &'a [TextColumn<'a>], groups: &Groups) -> Self {
        let rows = groups.bounds.last().copied().unwrap_or(0)
            - groups.bounds.first().copied().unwrap_or(0);
        let mut layout = Self {
            ends: Vec::with_capacity(rows.max(0) as usize * columns.len() * 8),
            pieces: Vec::new(),
            sizes: Vec::with_capacity(groups.len() * columns.len()),
        };
        let mut values: Vec<Value<'a>> = Vec::new();
        for group in 0..groups.len() {
            for column in columns {
                values.clear();
                let start = layout.ends.len();
                let mut end = 0u64;
                for row in groups.rows(group) {
                    let value = column.value(row);
                    end += (value.end - value.start) as u64;
                    layout.ends.extend_from_slice(&end.to_le_bytes());
                    values.push(value);
                }
                layout.sizes.push(end);
                layout.pieces.push(Piece::Ends(start, layout.ends.len()));
                layout.push_values(&values);
            }
        }
        layout
    }

    /// The values as pieces, neighbours in one chunk joined into one piece.
    fn push_values(&mut self, values: &[Value<'a>]) {
        for value in values.iter().filter(|value| value.end > value.start) {
            if let Some(Piece::Value(last)) = self.pieces.last_mut() {
                if last.extend(value) {
                    continue;
                }
            }
            self.pieces.push(Piece::Value(*value));
        }
    }

    /// The text bytes of each group's columns, group by group.
    pub fn sizes(&self) -> &[u64] {
        &self.sizes
    }

    /// Bytes of all the groups.
    pub fn len(&self) -> usize {
        self.slices().map(<[u8]>::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn slices(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.pieces.iter().map(|piece| match *piece {
            Piece::Ends(start, end) => &self.ends[start..end],
            Piece::Value(value) => value.bytes(),
        })
    }

    /// Write the groups into `file` from `position`, through a buffer written out a megabyte
    /// at a time. (Handing the kernel the slices where they are, `pwritev` of up to 1024 at
    /// a time, took 0.11 s of CPU against 0.07 s for 139 MiB of FLAN's rows: its cost per
    /// slice of a few hundred bytes is more than the copy it saves.)
    pub fn write_at(&self, file: &File, position: u64) -> io::Result<()> {
        const BUFFER_BYTES: usize = 1 << 20;
        let mut buffer = Vec::with_capacity(BUFFER_BYTES);
        let mut position = position;
        for slice in self.slices() {
            if buffer.len() + slice.len() > BUFFER_BYTES && !buffer.is_empty() {
                file.write_all_at(&buffer, position)?;
                position += buffer.len() as u64;
                buffer.clear();
            }
            if slice.len() >= BUFFER_BYTES {
                file.write_all_at(slice, position)?;
                position += slice.len() as u64;
            } else {
                buffer.extend_from_slice(slice);
            }
        }
        file.write_all_at(&buffer, position)
    }

    /// The groups into `out`, which holds exactly their bytes.
    pub fn fill(&self, out: &mut [u8]) {
        let mut at = 0;
        for slice in self.slices() {
            out[at..at + slice.len()].copy_from_slice(slice);
            at += slice.len();
        }
        assert_eq!(at, out.len(), "the block holds the groups exactly");
    }
}

/// Where a stored group is: in a spill file, or in a block of memory, from `position`.
pub enum Stored<'a> {
    File(&'a File),
    Memory(&'a [u8]),
}

/// A stored group: where, its rows and the text bytes of each of its columns.
pub struct StoredGroup<'a> {
    pub stored: Stored<'a>,
    pub position: u64,
    pub rows: usize,
    pub text: &'a [u64],
}

impl StoredGroup<'_> {
    /// Where `column`'s end offsets start; its text follows them.
    fn column_start(&self, column: usize) -> u64 {
        self.position + group_size(self.rows, &self.text[..column])
    }

    fn read(&self, at: u64, out: &mut [u8]) -> io::Result<()> {
        match self.stored {
            Stored::File(file) => file.read_exact_at(out, at),
            Stored::Memory(block) => {
                let start = usize::try_from(at)
                    .ok()
                    .filter(|start| start + out.len() <= block.len());
                let start = start.ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "a group lies past its memory block",
                    )
                })?;
                out.copy_from_slice(&block[start..start + out.len()]);
                Ok(())
            }
        }
    }
}

/// Width of the gathered offsets: Arrow `string` (int32) while the text fits, else
/// `large_string` (int64).
pub fn offset_width(text: u64) -> usize {
    if text <= i32::MAX as u64 {
        4
    } else {
        8
    }
}

/// Column `column` of `groups`, joined in order: its offsets (`rows + 1`, of
/// [`offset_width`] of the text) into `offsets`, its text into `data`, both of the exact size.
/// The text is read from its file or block straight into `data`.
pub fn gather_column(
    groups: &[StoredGroup],
    column: usize,
    offsets: &mut [u8],
    data: &mut [u8],
) -> io::Result<()> {
    let width = offsets.len() / (groups.iter().map(|group| group.rows).sum::<usize>() + 1);
    let mut ends = Vec::new();
    let (mut row, mut base) = (0usize, 0u64);
    write_offset(offsets, width, 0, 0);
    for group in groups {
        let start = group.column_start(column);
        let text = group.text[column];
        ends.resize(group.rows * 8, 0);
        group.read(start, &mut ends)?;
        for end in ends.chunks_exact(8) {
            let end = u64::from_le_bytes(end.try_into().expect("eight bytes"));
            if end > text {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a stored row ends past its group's text",
                ));
            }
            row += 1;
            write_offset(offsets, width, row, base + end);
        }
        let at = base as usize;
        group.read(
            start + 8 * group.rows as u64,
            &mut data[at..at + text as usize],
        )?;
        base += text;
    }
    Ok(())
}

fn write_offset(offsets: &mut [u8], width: usize, index: usize, value: u64) {
    let slot = &mut offsets[index * width..(index + 1) * width];
    if width == 4 {
        slot.copy_from_slice(&(value as i32).to_le_bytes());
    } else {
        slot.copy_from_slice(&(value as i64).to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(values: &[&str]) -> (Vec<i64>, Vec<u8>) {
        let mut offsets = vec![0i64];
        let mut data = Vec::new();
        for value in values {
            data.extend_from_slice(value.as_bytes());
            offsets.push(data.len() as i64);
        }
        (offsets, data)
    }

    /// A new empty spill file in `dir`, open to read and write.
    fn spill_file(dir: &tempfile::TempDir) -> File {
        File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(dir.path().join("spill"))
            .unwrap()
    }

    fn strings(offsets: &[u8], data: &[u8], width: usize) -> Vec<String> {
        let ends: Vec<usize> = offsets
            .chunks_exact(width)
            .map(|slot| {
                if width == 4 {
                    i32::from_le_bytes(slot.try_into().unwrap()) as usize
                } else {
                    i64::from_le_bytes(slot.try_into().unwrap()) as usize
                }
            })
            .collect();
        ends.windows(2)
            .map(|pair| String::from_utf8(data[pair[0]..pair[1]].to_vec()).unwrap())
            .collect()
    }

    /// Groups written to a file and to memory, gathered back across both, give each group's
    /// rows in the order given, every column joined.
    #[test]
    fn groups_come_back_joined_in_order() {
        let (a_offsets, a_data) = column(&["q0", "", "q2 é", "q3", "q4"]);
        let (b_offsets, b_data) = column(&["a0", "a1", "", "a3 ✓", "a4"]);
        // The first column in two chunks (rows 0-1, 2-4), the second in one.
        let columns = [
            TextColumn::new(vec![
                TextChunk {
                    offsets: &a_offsets[..3],
                    data: &a_data,
                },
                TextChunk {
                    offsets: &a_offsets[2..],
                    data: &a_data,
                },
            ]),
            TextColumn::new(vec![TextChunk {
                offsets: &b_offsets,
                data: &b_data,
            }]),
        ];
        // Two groups: rows 3, 0 then rows 1, 4, 2.
        let order = [3i64, 0, 1, 4, 2];
        let bounds = [0i64, 2, 5];
        let groups = Groups {
            order: Some(&order),
            bounds: &bounds,
        };
        check(&columns, &groups).unwrap();
        let layout = GroupLayout::new(&columns, &groups);
        let sizes = layout.sizes().to_vec();
        assert_eq!(sizes, vec![4, 8, 7, 4]);

        let dir = tempfile::tempdir().unwrap();
        let file = spill_file(&dir);
        // The file starts with other bytes: the groups go from the position given.
        file.write_all_at(b"earlier", 0).unwrap();
        layout.write_at(&file, 7).unwrap();
        let first = group_size(2, &sizes[..2]);
        assert_eq!(
            file.metadata().unwrap().len(),
            7 + first + group_size(3, &sizes[2..])
        );

        let mut block = vec![0u8; first as usize];
        let head = Groups {
            order: Some(&order),
            bounds: &bounds[..2],
        };
        GroupLayout::new(&columns, &head).fill(&mut block);

        // The second group from the file, then the first from memory.
        let stored = [
            StoredGroup {
                stored: Stored::File(&file),
                position: 7 + first,
                rows: 3,
                text: &sizes[2..],
            },
            StoredGroup {
                stored: Stored::Memory(&block),
                position: 0,
                rows: 2,
                text: &sizes[..2],
            },
        ];
        let expected = [
            ["", "q4", "q2 é", "q3", "q0"],
            ["a1", "a4", "", "a3 ✓", "a0"],
        ];
        for (index, expected) in expected.iter().enumerate() {
            let text: u64 = stored.iter().map(|group| group.text[index]).sum();
            let width = offset_width(text);
            let mut offsets = vec![0u8; 6 * width];
            let mut data = vec![0u8; text as usize];
            gather_column(&stored, index, &mut offsets, &mut data).unwrap();
            assert_eq!(strings(&offsets, &data, width), expected.to_vec());
        }
    }

    /// Thousands of scattered rows (more than the write buffer holds) and runs of
    /// neighbouring rows (one slice) are written to the file as they are filled into memory.
    #[test]
    fn a_file_gets_the_bytes_memory_gets() {
        let values: Vec<String> = (0..5000)
            .map(|row| format!("value {row} {}", "x".repeat(row % 7)))
            .collect();
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        let (offsets, data) = column(&refs);
        let columns = [TextColumn::new(vec![TextChunk {
            offsets: &offsets,
            data: &data,
        }])];
        // Even rows scattered backwards, then the odd rows in order (neighbours, not adjacent).
        let mut order: Vec<i64> = (0..5000).rev().filter(|row| row % 2 == 0).collect();
        order.extend((0..2500).map(|row| 2 * row as i64 + 1));
        let bounds = [0i64, 2500, 2600, 5000];
        let groups = Groups {
            order: Some(&order),
            bounds: &bounds,
        };
        let layout = GroupLayout::new(&columns, &groups);
        let mut block = vec![0u8; layout.len()];
        layout.fill(&mut block);
        let dir = tempfile::tempdir().unwrap();
        let file = spill_file(&dir);
        layout.write_at(&file, 3).unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("spill")).unwrap()[3..],
            block[..]
        );
        // Batch order: the values are one slice of the batch's data.
        let all = [0i64, 5000];
        let whole = GroupLayout::new(
            &columns,
            &Groups {
                order: None,
                bounds: &all,
            },
        );
        assert_eq!(whole.pieces.len(), 2);
    }

    /// Rows in batch order when no order is given; a group with no rows is empty.
    #[test]
    fn no_order_keeps_batch_order() {
        let (offsets, data) = column(&["x", "yy", "zzz"]);
        let columns = [TextColumn::new(vec![TextChunk {
            offsets: &offsets,
            data: &data,
        }])];
        let bounds = [0i64, 0, 3];
        let groups = Groups {
            order: None,
            bounds: &bounds,
        };
        let layout = GroupLayout::new(&columns, &groups);
        let sizes = layout.sizes().to_vec();
        assert_eq!(sizes, vec![0, 6]);
        let mut block =
            vec![0u8; (group_size(0, &sizes[..1]) + group_size(3, &sizes[1..])) as usize];
        assert_eq!(layout.len(), block.len());
        layout.fill(&mut block);
        let stored = [StoredGroup {
            stored: Stored::Memory(&block),
            position: 0,
            rows: 3,
            text: &sizes[1..],
        }];
        let mut out_offsets = vec![0u8; 16];
        let mut out_data = vec![0u8; 6];
        gather_column(&stored, 0, &mut out_offsets, &mut out_data).unwrap();
        assert_eq!(strings(&out_offsets, &out_data, 4), vec!["x", "yy", "zzz"]);
    }

    /// Rows the columns do not have, offsets past the data and bounds out of order are refused.
    #[test]
    fn bad_shapes_are_refused() {
        let (offsets, data) = column(&["a", "b"]);
        let columns = [TextColumn::new(vec![TextChunk {
            offsets: &offsets,
            data: &data,
        }])];
        let order = [0i64, 5];
        let bounds = [0i64, 2];
        assert!(check(
            &columns,
            &Groups {
                order: Some(&order),
                bounds: &bounds
            }
        )
        .is_err());
        let bounds = [0i64, 3];
        assert!(check(
            &columns,
            &Groups {
                order: None,
                bounds: &bounds
            }
        )
        .is_err());
        let short = [0i64, 1, 9];
        let bad = [TextColumn::new(vec![TextChunk {
            offsets: &short,
            data: &data,
        }])];
        let bounds = [0i64, 2];
        assert!(check(
            &bad,
            &Groups {
                order: None,
                bounds: &bounds
            }
        )
        .is_err());
        let reversed = [0i64, 2, 1];
        assert!(check(
            &columns,
            &Groups {
                order: None,
                bounds: &reversed
            }
        )
        .is_err());
    }

    /// A file shorter than its groups is an error, not short rows.
    #[test]
    fn a_short_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = spill_file(&dir);
        file.write_all_at(&[0u8; 8], 0).unwrap();
        let text = [5u64];
        let stored = [StoredGroup {
            stored: Stored::File(&file),
            position: 0,
            rows: 1,
            text: &text,
        }];
        let (mut offsets, mut data) = (vec![0u8; 8], vec![0u8; 5]);
        let error = gather_column(&stored, 0, &mut offsets, &mut data).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof);
    }
}
