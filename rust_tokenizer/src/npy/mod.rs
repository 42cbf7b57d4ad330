//! `.npy` version 1.0 writers for 1-D little-endian integer arrays, with the header text of
//! the program whose files we reproduce byte for byte:
//!
//! - tokenized folders: data_io's tokenizer, which writes with Rust's `ndarray-npy` crate
//!   ([`HeaderStyle::NdarrayNpy`], [`NpyWriter`]);
//! - sampled folders: data_io's sampler, which writes with `numpy.save`
//!   ([`HeaderStyle::Numpy`], [`HashedNpyWriter`]).
//!
//! Both pad a 1-D header to 128 bytes whatever the length, so a writer can put a placeholder
//! header first, stream the data, and patch the length in at the end without moving anything:
//! arrays never have to fit in memory.
//!
//! The reader's side: [`parse_plain_header`] and [`read_plain_header`] accept exactly these two
//! headers (any length, any integer type, [`IntType`]); anything else is for numpy's own parser.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{IoContext, Result};

mod int_type;
pub use int_type::IntType;

const MAGIC: &[u8] = b"\x93NUMPY\x01\x00";
/// Where a 1-D array's data starts, in either style (see [`header`]).
pub const HEADER_LEN: usize = 128;

/// Whose header text to write. Both describe the same array; only the text differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderStyle {
    /// `numpy.save`: `{'descr': '<i8', 'fortran_order': False, 'shape': (N,), }`.
    Numpy,
    /// `ndarray-npy` 0.10 (data_io's tokenizer): `{'descr': '<u4', 'fortran_order': False,
    /// 'shape': (N,)}`, no trailing comma inside the braces.
    NdarrayNpy,
}

/// An element type with a fixed little-endian `.npy` description.
pub trait NpyElement: Copy + Send + Sync + 'static {
    const DESCR: &'static str;
    const SIZE: usize;
    fn extend_le(values: &[Self], out: &mut Vec<u8>);
}

macro_rules! npy_element {
    ($($t:ty => $descr:literal),*) => {$(
        impl NpyElement for $t {
            const DESCR: &'static str = $descr;
            const SIZE: usize = std::mem::size_of::<$t>();
            fn extend_le(values: &[Self], out: &mut Vec<u8>) {
                out.reserve(values.len() * Self::SIZE);
                for value in values {
                    out.extend_from_slice(&value.to_le_bytes());
                }
            }
        }
    )*};
}
npy_element!(u32 => "<u4", u64 => "<u8", i64 => "<i8");

/// The 128-byte version 1.0 header `style` writes for a 1-D array of `len` elements of type
/// `descr`: magic, the header length, the dictionary, spaces, `\n`.
///
/// Both writers align the data to 64 bytes. `ndarray-npy` pads with 1 to 64 spaces (never 0),
/// numpy with 0 to 63 after reserving 21 characters for the length's digits; for a 1-D array
/// the unpadded header is 66 to 85 bytes (`ndarray-npy`) or 88 (numpy), so both round it up
/// to 128.
pub fn header(style: HeaderStyle, descr: &str, len: u64) -> [u8; HEADER_LEN] {
    let close = match style {
        HeaderStyle::Numpy => ", }",
        HeaderStyle::NdarrayNpy => "}",
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({len},){close}");
    let body_len = HEADER_LEN - MAGIC.len() - 2;
    assert!(dict.len() < body_len, "a 1-D header always fits");
    let mut out = [b' '; HEADER_LEN];
    out[..MAGIC.len()].copy_from_slice(MAGIC);
    out[MAGIC.len()..MAGIC.len() + 2].copy_from_slice(&(body_len as u16).to_le_bytes());
    let start = MAGIC.len() + 2;
    out[start..start + dict.len()].copy_from_slice(dict.as_bytes());
    out[HEADER_LEN - 1] = b'\n';
    out
}

/// A plain `.npy` header: element type, length and where the data starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlainHeader {
    /// The type string as the header spells it (`<u4`, `|u1`, `>i8`): always three ASCII bytes.
    descr: [u8; 3],
    pub element: IntType,
    pub len: u64,
    pub data_offset: usize,
}

impl PlainHeader {
    /// The element type as the header spells it, for numpy's `dtype()`.
    pub fn descr(&self) -> &str {
        std::str::from_utf8(&self.descr).expect("IntType::parse accepts ASCII only")
    }
}

/// Magic, version and the header's length: the bytes before the dictionary.
const PREFIX_LEN: usize = MAGIC.len() + 2;

/// The header at the start of `bytes` if it is a version 1.0 header of a 1-D integer array as
/// `numpy.save` writes it, `{'descr': '<i8', 'fortran_order': False, 'shape': (N,), }`, or as
/// `ndarray-npy` does, the same without the `, ` before `}`; padded with spaces, then `\n`.
/// `None` for any other header, or a cut one.
pub fn parse_plain_header(bytes: &[u8]) -> Option<PlainHeader> {
    let after_magic = bytes.strip_prefix(MAGIC)?;
    let header_len = u16::from_le_bytes([*after_magic.first()?, *after_magic.get(1)?]);
    let data_offset = PREFIX_LEN + usize::from(header_len);
    let text = bytes.get(PREFIX_LEN..data_offset)?;
    let text = text.strip_prefix(b"{'descr': '")?;
    let quote = text.iter().position(|&byte| byte == b'\'')?;
    let element = IntType::parse(std::str::from_utf8(&text[..quote]).ok()?).ok()?;
    let descr = text[..quote].try_into().ok()?;
    let text = text[quote..].strip_prefix(b"', 'fortran_order': False, 'shape': (")?;
    let digits = text.iter().take_while(|byte| byte.is_ascii_digit()).count();
    let len = std::str::from_utf8(&text[..digits]).ok()?.parse().ok()?;
    let text = text[digits..].strip_prefix(b",)")?;
    let text = text
        .strip_prefix(b", }")
        .or_else(|| text.strip_prefix(b"}"))?;
    let (newline, padding) = text.split_last()?;
    (*newline == b'\n' && padding.iter().all(|&byte| byte == b' ')).then_some(PlainHeader {
        descr,
        element,
        len,
        data_offset,
    })
}

/// [`parse_plain_header`] of the file at `path`, reading only its header. `None` when the
/// header is not plain (or the file is shorter than it); an error if the file cannot be read.
pub fn read_plain_header(path: &Path) -> Result<Option<PlainHeader>> {
    let mut file = File::open(path).at(path)?;
    let mut bytes = Vec::with_capacity(HEADER_LEN);
    (&mut file)
        .take(PREFIX_LEN as u64)
        .read_to_end(&mut bytes)
        .at(path)?;
    if bytes.len() == PREFIX_LEN && bytes.starts_with(MAGIC) {
        let header_len = u16::from_le_bytes([bytes[8], bytes[9]]);
        file.take(u64::from(header_len))
            .read_to_end(&mut bytes)
            .at(path)?;
    }
    Ok(parse_plain_header(&bytes))
}

/// Streams a 1-D array to a `.npy` file with data_io's tokenizer header
/// ([`HeaderStyle::NdarrayNpy`]); `finish` writes the final length. Durability is the caller's
/// (`tokenize::durable::sync_folders` for a batch of folders).
pub struct NpyWriter<T: NpyElement> {
    path: PathBuf,
    out: BufWriter<File>,
    len: u64,
    scratch: Vec<u8>,
    _element: PhantomData<T>,
}

impl<T: NpyElement> NpyWriter<T> {
    const STYLE: HeaderStyle = HeaderStyle::NdarrayNpy;

    pub fn create(path: &Path) -> Result<Self> {
        let file = File::create(path).at(path)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(&header(Self::STYLE, T::DESCR, 0)).at(path)?;
        Ok(NpyWriter {
            path: path.to_path_buf(),
            out,
            len: 0,
            scratch: Vec::new(),
            _element: PhantomData,
        })
    }

    pub fn append(&mut self, values: &[T]) -> Result<()> {
        self.scratch.clear();
        T::extend_le(values, &mut self.scratch);
        self.out.write_all(&self.scratch).at(&self.path)?;
        self.len += values.len() as u64;
        Ok(())
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Patch the header with the final length and flush. Returns the element count.
    pub fn finish(self) -> Result<u64> {
        let path = self.path;
        let mut file = self
            .out
            .into_inner()
            .map_err(|err| err.into_error())
            .at(&path)?;
        file.seek(SeekFrom::Start(0)).at(&path)?;
        file.write_all(&header(Self::STYLE, T::DESCR, self.len))
            .at(&path)?;
        Ok(self.len)
    }
}

/// Write a whole array at once, as [`NpyWriter`] does.
pub fn write_npy<T: NpyElement>(path: &Path, values: &[T]) -> Result<()> {
    let mut writer = NpyWriter::<T>::create(path)?;
    writer.append(values)?;
    writer.finish().map(|_| ())
}

/// The little-endian bytes of `values`: the values' own memory on a little-endian machine.
fn le_bytes<T: NpyElement>(values: &[T]) -> Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        // SAFETY: the elements are plain integers (no padding), so their memory is
        // `len * SIZE` initialised bytes, borrowed for as long as `values` is.
        Cow::Borrowed(unsafe {
            std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
        })
    } else {
        let mut out = Vec::new();
        T::extend_le(values, &mut out);
        Cow::Owned(out)
    }
}

/// Lowercase hex of a finished SHA-256.
pub fn hex_digest(hasher: Sha256) -> String {
    hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Writes a 1-D array of known length as `numpy.save` does (data_io's sampler), in pieces, hashing each piece from
/// memory as it goes (no second read of the file); `finish` checks the length, fsyncs and
/// returns the file's size and SHA-256.
pub struct HashedNpyWriter<T: NpyElement> {
    path: PathBuf,
    file: File,
    hasher: Sha256,
    expected: u64,
    written: u64,
    _element: PhantomData<T>,
}

impl<T: NpyElement> HashedNpyWriter<T> {
    pub fn create(path: &Path, len: u64) -> Result<Self> {
        let head = header(HeaderStyle::Numpy, T::DESCR, len);
        let mut file = File::create(path).at(path)?;
        file.write_all(&head).at(path)?;
        Ok(HashedNpyWriter {
            path: path.to_path_buf(),
            file,
            hasher: Sha256::new_with_prefix(head),
            expected: len,
            written: 0,
            _element: PhantomData,
        })
    }

    pub fn append(&mut self, values: &[T]) -> Result<()> {
        let data = le_bytes(values);
        self.hasher.update(&data);
        self.file.write_all(&data).at(&self.path)?;
        self.written += values.len() as u64;
        Ok(())
    }

    pub fn finish(self) -> Result<(u64, String)> {
        assert_eq!(
            self.written,
            self.expected,
            "{}: length",
            self.path.display()
        );
        self.file.sync_all().at(&self.path)?;
        let size = HEADER_LEN as u64 + self.written * T::SIZE as u64;
        Ok((size, hex_digest(self.hasher)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header as numpy 2.x writes it for `np.save(f, np.zeros(3, dtype="<u4"))`.
    const NUMPY_U4_3: &str = "{'descr': '<u4', 'fortran_order': False, 'shape': (3,), }";
    /// A header as data_io's tokenizer (`ndarray-npy` 0.10) writes it for 976 tokens.
    const NDARRAY_NPY_U4_976: &str = "{'descr': '<u4', 'fortran_order': False, 'shape': (976,)}";

    fn assert_layout(head: &[u8; HEADER_LEN], dict: &str) {
        assert_eq!(&head[..8], MAGIC);
        assert_eq!(u16::from_le_bytes([head[8], head[9]]), 118);
        assert_eq!(&head[10..10 + dict.len()], dict.as_bytes());
        assert!(head[10 + dict.len()..127].iter().all(|b| *b == b' '));
        assert_eq!(head[127], b'\n');
    }

    #[test]
    fn header_matches_numpy_layout() {
        assert_layout(&header(HeaderStyle::Numpy, "<u4", 3), NUMPY_U4_3);
    }

    #[test]
    fn header_matches_ndarray_npy_layout() {
        assert_layout(
            &header(HeaderStyle::NdarrayNpy, "<u4", 976),
            NDARRAY_NPY_U4_976,
        );
        assert_layout(
            &header(HeaderStyle::NdarrayNpy, "<u8", 0),
            "{'descr': '<u8', 'fortran_order': False, 'shape': (0,)}",
        );
    }

    /// `ndarray-npy`'s rule, restated: the whole header is the next multiple of 64 strictly
    /// above the magic, dictionary and newline (at least one space of padding).
    fn ndarray_npy_header_len(dict_len: usize) -> usize {
        let unpadded = MAGIC.len() + 2 + dict_len + 1;
        unpadded + (64 - unpadded % 64)
    }

    #[test]
    fn every_length_fits_both_styles_in_128_bytes() {
        for len in [0, 9, 10, 976, u64::from(u32::MAX), u64::MAX] {
            for descr in ["<u4", "<u8", "<i8"] {
                let head = header(HeaderStyle::NdarrayNpy, descr, len);
                let dict_len = head[10..127].iter().rposition(|b| *b == b'}').unwrap() + 1;
                assert_eq!(
                    ndarray_npy_header_len(dict_len),
                    HEADER_LEN,
                    "{descr} {len}"
                );
                assert_eq!(header(HeaderStyle::Numpy, descr, len)[127], b'\n');
            }
        }
    }

    #[test]
    fn numpy_and_ndarray_npy_headers_are_parsed_and_others_refused() {
        for style in [HeaderStyle::Numpy, HeaderStyle::NdarrayNpy] {
            assert_eq!(
                parse_plain_header(&header(style, "<u8", 12)),
                Some(PlainHeader {
                    descr: *b"<u8",
                    element: IntType::parse("<u8").unwrap(),
                    len: 12,
                    data_offset: 128,
                }),
                "{style:?}"
            );
        }
        let plain = header(HeaderStyle::Numpy, "<u8", 12);
        // numpy 2.x's own bytes for np.save(f, np.zeros(3, ">i2")).
        let mut numpy =
            b"\x93NUMPY\x01\x00v\x00{'descr': '>i2', 'fortran_order': False, 'shape': (3,), }"
                .to_vec();
        numpy.resize(127, b' ');
        numpy.push(b'\n');
        let parsed = parse_plain_header(&numpy).unwrap();
        assert_eq!(parsed.element, IntType::parse(">i2").unwrap());
        assert_eq!(parsed.descr(), ">i2");
        let swap = |from: &str, to: &str| {
            let text = String::from_utf8_lossy(&plain).replace(from, to);
            parse_plain_header(text.as_bytes()).is_none()
        };
        assert!(swap("False", "True"), "Fortran order");
        assert!(swap("(12,)", "(3, 4)"), "two dimensions");
        assert!(swap("(12,)", "()"), "a scalar");
        assert!(swap("<u8", "<f8"), "floats");
        assert!(swap(",), }", ",),}"), "another spelling");
        let mut version_two = plain.to_vec();
        version_two[6] = 2;
        assert!(parse_plain_header(&version_two).is_none());
        assert!(parse_plain_header(&plain[..100]).is_none(), "a cut header");
        let mut unterminated = plain.to_vec();
        unterminated[127] = b' ';
        assert!(parse_plain_header(&unterminated).is_none());
    }

    #[test]
    fn a_file_is_read_up_to_its_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npy");
        write_npy::<u32>(&path, &[1, 2, 3]).unwrap();
        let read = read_plain_header(&path).unwrap().unwrap();
        assert_eq!(
            (read.descr(), read.len, read.data_offset),
            ("<u4", 3, HEADER_LEN)
        );
        std::fs::write(&path, &header(HeaderStyle::Numpy, "<i8", 5)[..60]).unwrap();
        assert_eq!(read_plain_header(&path).unwrap(), None, "a cut header");
        std::fs::write(&path, b"\x93NU").unwrap();
        assert_eq!(read_plain_header(&path).unwrap(), None, "a cut magic");
        let missing = dir.path().join("missing.npy");
        assert!(read_plain_header(&missing).is_err());
    }

    #[test]
    fn streamed_array_has_patched_length_and_le_data() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npy");
        let mut writer = NpyWriter::<u64>::create(&path).unwrap();
        writer.append(&[1, 2]).unwrap();
        writer.append(&[]).unwrap();
        writer.append(&[u64::MAX]).unwrap();
        assert_eq!(writer.finish().unwrap(), 3);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(
            &bytes[..HEADER_LEN],
            &header(HeaderStyle::NdarrayNpy, "<u8", 3)
        );
        let data: Vec<u64> = bytes[HEADER_LEN..]
            .chunks(8)
            .map(|chunk| u64::from_le_bytes(chunk.try_into().unwrap()))
            .collect();
        assert_eq!(data, [1, 2, u64::MAX]);
    }

    #[test]
    fn hashed_writer_writes_numpy_headers_and_hashes_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.npy");
        let mut writer = HashedNpyWriter::<i64>::create(&path, 3).unwrap();
        writer.append(&[-1]).unwrap();
        writer.append(&[0, i64::MAX]).unwrap();
        let (size, sha256) = writer.finish().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(size, bytes.len() as u64);
        assert_eq!(&bytes[..HEADER_LEN], &header(HeaderStyle::Numpy, "<i8", 3));
        assert_eq!(&bytes[HEADER_LEN..HEADER_LEN + 8], &(-1i64).to_le_bytes());
        assert_eq!(sha256, hex_digest(Sha256::new_with_prefix(&bytes)));
    }

    #[test]
    fn empty_array() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.npy");
        write_npy::<u32>(&path, &[]).unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            header(HeaderStyle::NdarrayNpy, "<u4", 0)
        );
    }
}
