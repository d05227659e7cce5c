//! `--shard I/N` over a whole job: the job's units of work (a call, or a
//! class of identical calls, which stay together) partitioned by their
//! estimated cost ([`super::cost`]) so that the shards finish close
//! together, the same way on every machine.

use std::cmp::Reverse;

/// The shard of each unit: largest cost first onto the least-loaded shard
/// (ties: the unit first in job order, then the lowest shard). `costs` is
/// in job order; the result is deterministic for the same costs.
pub fn partition(costs: &[u64], count: u32) -> Vec<u32> {
    let count = count.max(1) as usize;
    let mut order: Vec<usize> = (0..costs.len()).collect();
    order.sort_by_key(|&i| (Reverse(costs[i]), i));
    let mut loads = vec![0u128; count];
    let mut shard_of = vec![0u32; costs.len()];
    for i in order {
        let lightest = (0..count).min_by_key(|&s| (loads[s], s)).expect("at least one shard");
        loads[lightest] += u128::from(costs[i]);
        shard_of[i] = lightest as u32;
    }
    shard_of
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loads(costs: &[u64], shards: &[u32], count: u32) -> Vec<u64> {
        (0..count).map(|s| costs.iter().zip(shards).filter(|(_, &x)| x == s).map(|(c, _)| c).sum()).collect()
    }

    #[test]
    fn every_unit_lands_in_exactly_one_shard_the_same_way_every_time() {
        let costs: Vec<u64> = (0..200u64).map(|i| (i * 7919) % 1000).collect();
        for count in 1..6 {
            let shards = partition(&costs, count);
            assert_eq!(shards.len(), costs.len());
            assert!(shards.iter().all(|&s| s < count));
            assert_eq!(shards, partition(&costs, count), "deterministic");
            let total: u64 = loads(&costs, &shards, count).iter().sum();
            assert_eq!(total, costs.iter().sum::<u64>(), "a partition: nothing lost or counted twice");
        }
    }

    #[test]
    fn a_skewed_job_is_balanced_by_work_not_by_count() {
        // Two huge calls, a few large ones and many tiny ones.
        let mut costs = vec![1_000_000, 1_000_000, 300_000, 300_000, 200_000, 200_000];
        costs.extend(std::iter::repeat_n(1_000, 400));
        let shards = partition(&costs, 3);
        let l = loads(&costs, &shards, 3);
        let (max, min) = (*l.iter().max().unwrap(), *l.iter().min().unwrap());
        // Greedy largest-first is within the largest unit of the ideal; here much closer.
        assert!(max - min <= 1_000_000, "{l:?}");
        assert!(max <= costs.iter().sum::<u64>() / 3 + 1_000, "{l:?}");
        // The two huge calls go to different shards.
        assert_ne!(shards[0], shards[1]);
        // Equal costs: the unit first in job order takes the first shard.
        assert_eq!(partition(&[5, 5, 5], 3), vec![0, 1, 2]);
        assert_eq!(partition(&[], 4), Vec::<u32>::new());
    }
}
