//! The one memory-budget scheduler: work items with an estimated need of
//! memory run concurrently only while the needs of those running together
//! stay within a budget (an item needing more than the whole budget runs
//! alone). `replay --dump` admits calls one by one as room frees up
//! ([`within_budget`]); checkpoint compare hands rayon consecutive batches
//! ([`batches`]).

use std::sync::{Condvar, Mutex, PoisonError};

/// Runs `work` on every item, on up to `threads` threads, admitting items
/// in order and only while the `need`s of those running sum to at most
/// `budget` (an item needing more than the whole budget runs alone).
/// Returns the results in item order. The threads are plain threads, not
/// the rayon pool's, so waiting for room never blocks work the running
/// items hand to rayon.
pub fn within_budget<T: Sync, R: Send>(items: &[T], need: impl Fn(&T) -> u64 + Sync, budget: u64, threads: usize, work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    /// The next item to admit and the sum of the needs running.
    struct Admission {
        next: usize,
        used: u64,
    }
    /// Gives an item's need back when it is done, even by a panic.
    struct Release<'a>(&'a Mutex<Admission>, &'a Condvar, u64);
    impl Drop for Release<'_> {
        fn drop(&mut self) {
            self.0.lock().unwrap_or_else(PoisonError::into_inner).used -= self.2;
            self.1.notify_all();
        }
    }
    let (state, room) = (Mutex::new(Admission { next: 0, used: 0 }), Condvar::new());
    let results: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, items.len().max(1)) {
            scope.spawn(|| loop {
                let (i, n) = {
                    let mut s = state.lock().unwrap_or_else(PoisonError::into_inner);
                    loop {
                        let Some(item) = items.get(s.next) else { return };
                        let n = need(item);
                        if fits(s.used, n, budget) {
                            s.used += n;
                            s.next += 1;
                            break (s.next - 1, n);
                        }
                        s = room.wait(s).unwrap_or_else(PoisonError::into_inner);
                    }
                };
                let _release = Release(&state, &room, n);
                let r = work(&items[i]);
                *results[i].lock().unwrap_or_else(PoisonError::into_inner) = Some(r);
            });
        }
    });
    results.into_iter().map(|r| r.into_inner().unwrap_or_else(PoisonError::into_inner).expect("every item ran")).collect()
}

/// The items in order, in consecutive batches run at once whose needs fit
/// `budget` together (an item over it alone is a batch of its own).
pub fn batches<T>(items: &[T], need: impl Fn(&T) -> u64, budget: u64) -> Vec<&[T]> {
    let mut batches = vec![];
    let (mut start, mut used) = (0, 0u64);
    for (i, item) in items.iter().enumerate() {
        let n = need(item);
        if i > start && !fits(used, n, budget) {
            batches.push(&items[start..i]);
            (start, used) = (i, 0);
        }
        used = used.saturating_add(n);
    }
    if start < items.len() {
        batches.push(&items[start..]);
    }
    batches
}

/// The admission rule both share: an item joins those running (needing
/// `used`) when nothing runs or the sum stays within `budget`.
fn fits(used: u64, need: u64, budget: u64) -> bool {
    used == 0 || used.saturating_add(need) <= budget
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn the_running_needs_never_exceed_the_budget() {
        let needs: Vec<u64> = vec![3, 5, 2, 8, 1, 1, 4, 6, 2, 7, 3, 3, 20, 1];
        let (running, peak) = (AtomicU64::new(0), AtomicU64::new(0));
        let out = within_budget(
            &needs,
            |&n| n,
            10,
            4,
            |&n| {
                let now = running.fetch_add(n, Ordering::SeqCst) + n;
                peak.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(20));
                running.fetch_sub(n, Ordering::SeqCst);
                n * 10
            },
        );
        assert_eq!(out, needs.iter().map(|n| n * 10).collect::<Vec<_>>(), "results in item order");
        // 20 is over the budget alone and runs alone; everything else fits in 10.
        assert_eq!(peak.load(Ordering::SeqCst), 20);
        let peak = AtomicU64::new(0);
        let small: Vec<u64> = needs.into_iter().filter(|&n| n <= 10).collect();
        let running = AtomicU64::new(0);
        within_budget(
            &small,
            |&n| n,
            10,
            4,
            |&n| {
                peak.fetch_max(running.fetch_add(n, Ordering::SeqCst) + n, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(20));
                running.fetch_sub(n, Ordering::SeqCst);
            },
        );
        let peak = peak.load(Ordering::SeqCst);
        assert!(peak <= 10 && peak > 8, "ran concurrently within the budget: peak {peak}");
        assert!(within_budget(&Vec::<u64>::new(), |&n| n, 10, 4, |&n| n).is_empty());
    }

    #[test]
    fn batches_fit_the_budget_and_an_oversized_item_stands_alone() {
        let b = batches(&[3u64, 4, 2, 9, 1, 1], |&x| x, 7);
        assert_eq!(b, vec![&[3u64, 4][..], &[2][..], &[9][..], &[1, 1][..]]);
        assert!(batches(&[] as &[u64], |&x| x, 7).is_empty());
    }
}
