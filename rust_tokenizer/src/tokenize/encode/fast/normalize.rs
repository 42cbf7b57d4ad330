//! NFC exactly as `tokenizers`' `NFC` normaliser computes it (the same crate and Unicode 9
//! tables), skipping the work for text that is already NFC, which is nearly all of it.

use std::borrow::Cow;

use unicode_normalization_alignments::{is_nfc_quick, IsNormalized, UnicodeNormalization};

pub(crate) fn nfc(text: &str) -> Cow<'_, str> {
    if text.is_ascii() || is_nfc_quick(text.chars()) == IsNormalized::Yes {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.nfc().map(|(c, _)| c).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokenizers::normalizers::unicode::NFC;
    use tokenizers::{NormalizedString, Normalizer};

    fn reference(text: &str) -> String {
        let mut normalized = NormalizedString::from(text);
        NFC.normalize(&mut normalized).unwrap();
        normalized.get().to_string()
    }

    #[test]
    fn equals_the_reference_on_marks_and_compositions() {
        for text in [
            "plain ascii",
            "Cafe\u{301}",
            "A\u{30a} \u{1e9b}\u{323} \u{212b} \u{2126}",
            "e\u{302}\u{323} e\u{323}\u{302}",
            "\u{1100}\u{1161}\u{11a8} 한국어",
            "\u{fb01} \u{2460}",
            "\u{0958}\u{0915}\u{093c}",
        ] {
            assert_eq!(nfc(text), reference(text), "{text:?}");
        }
        assert!(matches!(nfc("Café"), Cow::Borrowed(_)));
    }

    /// The shortcut is the only code of ours: text the quick check passes must be its own NFC.
    #[test]
    fn quick_check_passes_only_text_that_nfc_keeps() {
        for code in 0x80..=char::MAX as u32 {
            let Some(c) = char::from_u32(code) else {
                continue;
            };
            for text in [c.to_string(), format!("{c}\u{301}"), format!("a{c}")] {
                if is_nfc_quick(text.chars()) == IsNormalized::Yes {
                    assert!(text.nfc().map(|(c, _)| c).eq(text.chars()), "{text:?}");
                }
            }
        }
    }
}
