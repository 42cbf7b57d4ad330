//! Rows of a sampled table gathered back to back: byte ranges of one token array copied to
//! given places in another, in any order (the exports read an epoch's rows this way, where one
//! Python slice assignment a row cost more than the copy itself).

/// Copy `lengths[i]` bytes from `source[starts[i]..]` to `target[destinations[i]..]` for every
/// `i`. Every range is checked first: on an error nothing has been copied.
pub fn copy_byte_ranges(
    source: &[u8],
    target: &mut [u8],
    starts: &[i64],
    lengths: &[i64],
    destinations: &[i64],
) -> Result<(), String> {
    if starts.len() != lengths.len() || starts.len() != destinations.len() {
        return Err(format!(
            "starts, lengths and destinations differ in length ({}, {}, {})",
            starts.len(),
            lengths.len(),
            destinations.len()
        ));
    }
    let range = |at: i64, length: i64, limit: usize, what: &str, index: usize| {
        let end = at.checked_add(length).filter(|_| at >= 0 && length >= 0);
        match end {
            Some(end) if end as u64 <= limit as u64 => Ok((at as usize, end as usize)),
            _ => Err(format!(
                "range {index}: {what} bytes {at}..{at}+{length} outside 0..{limit}"
            )),
        }
    };
    let mut copies = Vec::with_capacity(starts.len());
    for index in 0..starts.len() {
        let from = range(starts[index], lengths[index], source.len(), "source", index)?;
        let into = range(
            destinations[index],
            lengths[index],
            target.len(),
            "target",
            index,
        )?;
        copies.push((from, into));
    }
    for ((first, last), (into_first, into_last)) in copies {
        target[into_first..into_last].copy_from_slice(&source[first..last]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::copy_byte_ranges;

    #[test]
    fn copies_ranges_in_any_order() {
        let source: Vec<u8> = (0..10).collect();
        let mut target = vec![0u8; 6];
        copy_byte_ranges(&source, &mut target, &[7, 0, 4], &[2, 3, 1], &[0, 2, 5]).unwrap();
        assert_eq!(target, vec![7, 8, 0, 1, 2, 4]);
    }

    #[test]
    fn a_range_outside_either_array_copies_nothing() {
        let source: Vec<u8> = (0..10).collect();
        let mut target = vec![0u8; 4];
        let error = copy_byte_ranges(&source, &mut target, &[0, 9], &[2, 2], &[0, 2]).unwrap_err();
        assert!(error.contains("range 1: source"), "{error}");
        assert_eq!(target, vec![0; 4]);
        let error = copy_byte_ranges(&source, &mut target, &[0], &[2], &[3]).unwrap_err();
        assert!(error.contains("range 0: target"), "{error}");
        assert!(copy_byte_ranges(&source, &mut target, &[-1], &[1], &[0]).is_err());
        assert!(copy_byte_ranges(&source, &mut target, &[0], &[1, 2], &[0]).is_err());
    }
}
