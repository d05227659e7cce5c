//! CPython's `difflib.SequenceMatcher(None, a, b).ratio()`, ported exactly
//! (msprobe matches hyperparameter names and random-call code lines with
//! it): no junk, autojunk for a `b` of 200 or more elements, ties to the
//! smallest `i` then `j`, matches extended over equal neighbours.

use std::collections::HashMap;

/// `SequenceMatcher(None, a, b).ratio()` over the characters of `a` and `b`:
/// `2 * M / (len(a) + len(b))`, 1.0 when both are empty.
pub fn ratio(a: &str, b: &str) -> f64 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let total = a.len() + b.len();
    if total == 0 {
        return 1.0;
    }
    let b2j = chain(&b);
    let mut matched = 0usize;
    let mut queue = vec![(0, a.len(), 0, b.len())];
    while let Some((alo, ahi, blo, bhi)) = queue.pop() {
        let (i, j, k) = longest_match(&a, &b, &b2j, (alo, ahi, blo, bhi));
        if k > 0 {
            matched += k;
            if alo < i && blo < j {
                queue.push((alo, i, blo, j));
            }
            if i + k < ahi && j + k < bhi {
                queue.push((i + k, ahi, j + k, bhi));
            }
        }
    }
    2.0 * matched as f64 / total as f64
}

/// Where each element of `b` occurs, without the "popular" elements (more
/// than `len/100 + 1` occurrences in a `b` of 200 or more).
fn chain(b: &[char]) -> HashMap<char, Vec<usize>> {
    let mut b2j: HashMap<char, Vec<usize>> = HashMap::new();
    for (j, &c) in b.iter().enumerate() {
        b2j.entry(c).or_default().push(j);
    }
    if b.len() >= 200 {
        let most = b.len() / 100 + 1;
        b2j.retain(|_, js| js.len() <= most);
    }
    b2j
}

/// `find_longest_match(alo, ahi, blo, bhi)`: `(i, j, size)`.
fn longest_match(a: &[char], b: &[char], b2j: &HashMap<char, Vec<usize>>, (alo, ahi, blo, bhi): (usize, usize, usize, usize)) -> (usize, usize, usize) {
    let (mut besti, mut bestj, mut best) = (alo, blo, 0);
    let mut j2len: HashMap<usize, usize> = HashMap::new();
    for (i, c) in a.iter().enumerate().take(ahi).skip(alo) {
        let mut next = HashMap::new();
        for &j in b2j.get(c).map(Vec::as_slice).unwrap_or(&[]) {
            if j < blo {
                continue;
            }
            if j >= bhi {
                break;
            }
            let k = if j == 0 { 0 } else { j2len.get(&(j - 1)).copied().unwrap_or(0) } + 1;
            next.insert(j, k);
            if k > best {
                (besti, bestj, best) = (i + 1 - k, j + 1 - k, k);
            }
        }
        j2len = next;
    }
    while besti > alo && bestj > blo && a[besti - 1] == b[bestj - 1] {
        (besti, bestj, best) = (besti - 1, bestj - 1, best + 1);
    }
    while besti + best < ahi && bestj + best < bhi && a[besti + best] == b[bestj + best] {
        best += 1;
    }
    (besti, bestj, best)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values printed by CPython 3.10's difflib.
    #[test]
    fn ratios_match_cpython() {
        assert_eq!(ratio("", ""), 1.0);
        assert_eq!(ratio("abc", ""), 0.0);
        assert_eq!(ratio("learning_rate", "learning-rate"), 0.9230769230769231);
        assert_eq!(ratio("seq_length", "seq_len"), 0.8235294117647058);
        assert_eq!(ratio("abcd", "bcde"), 0.75);
        assert_eq!(ratio("hidden_size", "ffn_hidden_size"), 0.8461538461538461);
    }

    #[test]
    fn popular_elements_do_not_seed_matches_in_long_strings() {
        let b = "a".repeat(199) + "b";
        let a = "b".to_string() + &"a".repeat(10);
        assert_eq!(ratio(&a, &b), 2.0 * 1.0 / 211.0);
    }
}
