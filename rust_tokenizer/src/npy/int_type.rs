//! The integer element types of the `.npy` arrays the pipeline reads, as numpy spells them.

use crate::error::{Error, Result};

/// A 1-D integer element type as numpy describes it (`<u4`, `|u1`, `>i8`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntType {
    pub signed: bool,
    pub size: usize,
    pub big_endian: bool,
}

impl IntType {
    pub fn parse(descr: &str) -> Result<Self> {
        let bad = || Error::Config(format!("unsupported integer type {descr:?}"));
        let bytes = descr.as_bytes();
        let (order, kind, size) = match bytes {
            [order, kind, size] => (*order, *kind, *size),
            _ => return Err(bad()),
        };
        let size = match size {
            b'1' | b'2' | b'4' | b'8' => (size - b'0') as usize,
            _ => return Err(bad()),
        };
        let big_endian = match order {
            b'<' | b'=' => false,
            b'|' if size == 1 => false,
            b'>' => true,
            _ => return Err(bad()),
        };
        let signed = match kind {
            b'i' => true,
            b'u' => false,
            _ => return Err(bad()),
        };
        Ok(IntType {
            signed,
            size,
            big_endian: big_endian && size > 1,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numpy_type_strings() {
        let u4 = IntType::parse("<u4").unwrap();
        assert_eq!((u4.signed, u4.size, u4.big_endian), (false, 4, false));
        assert!(IntType::parse(">i8").unwrap().big_endian);
        assert!(!IntType::parse("|u1").unwrap().big_endian);
        for bad in ["<f4", "u4", "<u3", "|u4", "<U4", ""] {
            assert!(IntType::parse(bad).is_err(), "{bad}");
        }
    }
}
