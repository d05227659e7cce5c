//! The one memory-budget scheduler: work items with an estimated need of
//! memory run concurrently only while the needs of those running together
//! stay within a budget (an item needing more than the whole budget runs
//! alone). `replay --dump` admits calls one by one as room frees up, on
//! the rayon pool's threads ([`within_budget`]); checkpoint compare hands rayon consecutive batches
//! ([`batches`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

/// Runs `work` on every item, at most `threads` at once (and no more than
/// the rayon pool has threads), admitting items in order and only while the
/// `need`s of those running sum to at most `budget` (an item needing more
/// than the whole budget runs alone). Returns the results in item order.
///
/// The items run on the pool's own threads: the parallel work an item hands
/// to rayon then starts inline and the other threads steal from it, where a
/// thread outside the pool queues it and sleeps until it is done (a GPT-2
/// block on 2 cores: 12 % of the wall time idle, 0.88–0.93 s → 0.77–0.79 s).
/// A thread waiting for room runs the running items' parallel work meanwhile.
/// Its loops wait for each other at the start without running rayon's work,
/// so it is called from outside the pool's work (not from a `join` or
/// `par_iter`), and not twice at once on one pool.
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
    let loops = threads.min(rayon::current_num_threads()).clamp(1, items.len().max(1));
    let started = AtomicUsize::new(0);
    rayon::scope(|scope| {
        for _ in 0..loops {
            scope.spawn(|_| {
                // Every loop starts before any item does: a thread waiting
                // inside an item's parallel work steals whatever job is
                // queued, and a loop it took there would run nested, its
                // item held (and its memory counted) until the loop ended.
                started.fetch_add(1, Ordering::SeqCst);
                while started.load(Ordering::SeqCst) < loops {
                    std::thread::yield_now();
                }
                loop {
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
                            drop(s);
                            // Help the running items; with nothing to run, wait for
                            // room unless an item finished meanwhile.
                            let helped = rayon::yield_now() == Some(rayon::Yield::Executed);
                            s = state.lock().unwrap_or_else(PoisonError::into_inner);
                            if !helped && items.get(s.next).is_some_and(|item| !fits(s.used, need(item), budget)) {
                                s = room.wait_timeout(s, WAIT_FOR_ROOM).unwrap_or_else(PoisonError::into_inner).0;
                            }
                        }
                    };
                    let _release = Release(&state, &room, n);
                    let r = work(&items[i]);
                    *results[i].lock().unwrap_or_else(PoisonError::into_inner) = Some(r);
                }
            });
        }
    });
    results.into_iter().map(|r| r.into_inner().unwrap_or_else(PoisonError::into_inner).expect("every item ran")).collect()
}

/// How long a thread waiting for room sleeps before it looks again for the
/// running items' parallel work (a finished item wakes it at once).
const WAIT_FOR_ROOM: Duration = Duration::from_millis(1);

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

    /// A pool of `n` threads, whatever the machine's cores.
    fn pool(n: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new().num_threads(n).build().expect("a thread pool")
    }

    #[test]
    fn the_running_needs_never_exceed_the_budget() {
        let needs: Vec<u64> = vec![3, 5, 2, 8, 1, 1, 4, 6, 2, 7, 3, 3, 20, 1];
        let (running, peak) = (AtomicU64::new(0), AtomicU64::new(0));
        let out = pool(4).install(|| {
            within_budget(
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
            )
        });
        assert_eq!(out, needs.iter().map(|n| n * 10).collect::<Vec<_>>(), "results in item order");
        // 20 is over the budget alone and runs alone; everything else fits in 10.
        assert_eq!(peak.load(Ordering::SeqCst), 20);
        let peak = AtomicU64::new(0);
        let small: Vec<u64> = needs.into_iter().filter(|&n| n <= 10).collect();
        let running = AtomicU64::new(0);
        pool(4).install(|| {
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
            )
        });
        let peak = peak.load(Ordering::SeqCst);
        assert!(peak <= 10 && peak > 8, "ran concurrently within the budget: peak {peak}");
        assert!(within_budget(&Vec::<u64>::new(), |&n| n, 10, 4, |&n| n).is_empty());
    }

    #[test]
    fn at_most_as_many_items_at_once_as_the_pool_has_threads() {
        // Six loops on two threads would wait at the start barrier for ever:
        // the run goes on a thread of its own, and a run that does not end
        // within the minute fails the test instead of hanging it.
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (running, peak) = (AtomicU64::new(0), AtomicU64::new(0));
            pool(2).install(|| {
                within_budget(
                    &[1u64; 8],
                    |&n| n,
                    u64::MAX,
                    6,
                    |_| {
                        peak.fetch_max(running.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        running.fetch_sub(1, Ordering::SeqCst);
                    },
                )
            });
            done.send(peak.load(Ordering::SeqCst)).expect("the test waits");
        });
        let peak = finished.recv_timeout(std::time::Duration::from_secs(60)).expect("the run ends: no more loops than the pool has threads");
        assert_eq!(peak, 2);
    }

    #[test]
    fn items_waiting_for_room_let_the_running_items_parallel_work_finish() {
        use rayon::prelude::*;
        // Each item needs the whole budget, so the other threads wait for
        // room while the running item's parallel sums need them or itself.
        let items: Vec<u64> = (1..=6).collect();
        let out = pool(3).install(|| within_budget(&items, |_| 100, 100, 3, |&k| (0..200_000u64).into_par_iter().map(|x| (x % 7) * k).sum::<u64>()));
        let one: u64 = (0..200_000u64).map(|x| x % 7).sum();
        assert_eq!(out, items.iter().map(|k| one * k).collect::<Vec<_>>());
    }

    #[test]
    fn batches_fit_the_budget_and_an_oversized_item_stands_alone() {
        let b = batches(&[3u64, 4, 2, 9, 1, 1], |&x| x, 7);
        assert_eq!(b, vec![&[3u64, 4][..], &[2][..], &[9][..], &[1, 1][..]]);
        assert!(batches(&[] as &[u64], |&x| x, 7).is_empty());
    }
}
