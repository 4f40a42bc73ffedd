//! A chunk of clients run over a thread pool, largest first: every thread
//! takes the next client left as it frees up, in order of decreasing cost,
//! so one large client starts at once instead of last and no thread waits at
//! the chunk's end while another works through a queue dealt to it. What each
//! job computes does not depend on the thread or the order; the results come
//! back in the jobs' own order.

use std::cmp::Reverse;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs every job of `jobs` once on `pool`'s threads, as `run(thread, job)`
/// with `thread` the pool thread's index, taking them in order of decreasing
/// `cost` (ties in their own order); returns the results in the order of
/// `jobs`. A panicking job panics here once the others are done.
pub(crate) fn run_largest_first<J, R>(
    pool: &rayon::ThreadPool,
    jobs: Vec<J>,
    cost: impl Fn(&J) -> usize,
    run: impl Fn(usize, J) -> R + Sync,
) -> Vec<R>
where
    J: Send,
    R: Send,
{
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| Reverse(cost(&jobs[i])));
    let jobs: Vec<Mutex<Option<J>>> = jobs.into_iter().map(|j| Mutex::new(Some(j))).collect();
    let results: Vec<Mutex<Option<R>>> = jobs.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    pool.broadcast(|thread| {
        while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            // Each index is handed out once: neither lock is ever contended.
            let job = lock(&jobs[i]).take().expect("a job is taken once");
            let result = run(thread.index(), job);
            *lock(&results[i]) = Some(result);
        }
    });
    results
        .into_iter()
        .map(|r| {
            r.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every job ran")
        })
        .collect()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
#[path = "largest_first_tests.rs"]
mod tests;
