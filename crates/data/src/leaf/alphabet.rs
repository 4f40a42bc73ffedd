//! LEAF's 80-symbol alphabet for Shakespeare (`ALL_LETTERS` of LEAF's
//! `models/utils/language_utils.py`): a character's index in it is its symbol
//! id, the model's input token and label.

/// The symbols, in LEAF's order: newline, space, punctuation, digits, upper
/// and lower case letters and `}`.
pub const ALPHABET: &str =
    "\n !\"&'(),-.0123456789:;>?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]abcdefghijklmnopqrstuvwxyz}";

/// Number of symbols.
pub const SYMBOLS: usize = 80;

/// Characters per input window.
pub const SEQ_LEN: usize = 80;

/// The symbol id of `c`, or `None` when `c` is not in the alphabet.
pub fn symbol(c: char) -> Option<u8> {
    // A table over ASCII: every symbol is ASCII.
    const TABLE: [u8; 128] = {
        let mut table = [u8::MAX; 128];
        let bytes = ALPHABET.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            table[bytes[i] as usize] = i as u8;
            i += 1;
        }
        table
    };
    let code = c as usize;
    (code < 128 && TABLE[code] != u8::MAX).then(|| TABLE[code])
}

/// The character of symbol id `id` (`id < SYMBOLS`).
pub fn character(id: u8) -> char {
    ALPHABET.as_bytes()[id as usize] as char
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alphabet_has_leafs_80_symbols_in_order() {
        assert_eq!(ALPHABET.chars().count(), SYMBOLS);
        assert_eq!(symbol('\n'), Some(0));
        assert_eq!(symbol(' '), Some(1));
        assert_eq!(symbol('A'), Some(25));
        assert_eq!(symbol('a'), Some(53));
        assert_eq!(symbol('}'), Some(79));
        for (i, c) in ALPHABET.chars().enumerate() {
            assert_eq!(symbol(c), Some(i as u8));
            assert_eq!(character(i as u8), c);
        }
        for c in ['{', '@', '_', '/', '*', '<', '|', 'é', '\t'] {
            assert_eq!(symbol(c), None, "{c:?}");
        }
    }
}
