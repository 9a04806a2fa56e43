//! Blend-space weights against their contract: every invalid layout is a typed error naming
//! the child or axis, and for every valid layout and ANY parameter (NaN, ±∞, huge) the weights
//! are finite, non-negative, sum to one, move continuously with the parameter and are computed
//! without allocating.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use glam::Vec2;
use proptest::prelude::*;
use support::compare::worst_abs_diff;
use throng::blend_space::{BlendSpace, BlendSpaceError, BlendSpaceKind, GridAxis, MAX_BLEND_CHILDREN};

/// Counts allocations made by the current thread, so that the no-allocation test is not
/// disturbed by tests running beside it.
struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: defers every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn weights_of(space: &BlendSpace, p: Vec2) -> Vec<f32> {
    let mut w = vec![f32::NAN; space.num_children()];
    space.weights(p, &mut w);
    w
}

/// Non-negative, finite, summing to one within 1e-5, with a message saying where.
fn check_partition(space: &BlendSpace, p: Vec2) -> Result<(), TestCaseError> {
    let w = weights_of(space, p);
    prop_assert!(w.iter().all(|v| v.is_finite() && *v >= 0.0), "{:?} at {p}: {w:?}", space.kind());
    let sum: f32 = w.iter().sum();
    prop_assert!((sum - 1.0).abs() <= 1e-5, "{:?} at {p}: sum {sum}, {w:?}", space.kind());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Strategies

/// Any parameter coordinate, weighted towards the awkward ones.
fn coordinate() -> impl Strategy<Value = f32> {
    prop_oneof![
        4 => -30.0f32..30.0,
        1 => Just(f32::NAN),
        1 => Just(f32::INFINITY),
        1 => Just(f32::NEG_INFINITY),
        1 => Just(f32::MAX),
        1 => Just(-1e30f32),
        1 => any::<f32>(),
    ]
}

fn parameter() -> impl Strategy<Value = Vec2> {
    (coordinate(), coordinate()).prop_map(|(x, y)| Vec2::new(x, y))
}

/// Strictly increasing values, neighbours at least 0.1 apart.
fn increasing(len: impl Into<proptest::sample::SizeRange>) -> impl Strategy<Value = Vec<f32>> {
    (-20.0f32..20.0, prop::collection::vec(0.1f32..5.0, len)).prop_map(|(start, gaps)| {
        gaps.iter()
            .scan(start, |v, gap| {
                *v += gap;
                Some(*v)
            })
            .collect()
    })
}

/// Points at least 0.5 apart in a 20 × 20 box.
fn spread_points(len: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Vec<Vec2>> {
    prop::collection::vec((-10.0f32..10.0, -10.0f32..10.0), len)
        .prop_map(|v| v.into_iter().map(|(x, y)| Vec2::new(x, y)).collect::<Vec<_>>())
        .prop_filter("points closer than 0.5", |pts| {
            pts.iter().enumerate().all(|(i, a)| pts[..i].iter().all(|b| a.distance(*b) >= 0.5))
        })
}

/// A jittered `nx × ny` lattice of spacing 2: interior points move up to ±0.5 either way, border
/// points only along their border, so the hull has no nearly collinear bulge. Such a layout's
/// Delaunay triangles are all reasonably fat, which is what gives continuity a meaningful bound
/// (inside a triangle of altitude h a weight moves by up to step / h).
fn jittered_lattice() -> impl Strategy<Value = Vec<Vec2>> {
    (2usize..=4, 2usize..=4)
        .prop_flat_map(|(nx, ny)| {
            prop::collection::vec((-0.5f32..0.5, -0.5f32..0.5), nx * ny).prop_map(move |j| (nx, ny, j))
        })
        .prop_map(|(nx, ny, jitter)| {
            jitter
                .iter()
                .enumerate()
                .map(|(k, (jx, jy))| {
                    let (ix, iy) = (k % nx, k / nx);
                    let jx = if ix == 0 || ix == nx - 1 { 0.0 } else { *jx };
                    let jy = if iy == 0 || iy == ny - 1 { 0.0 } else { *jy };
                    Vec2::new(ix as f32 * 2.0 + jx, iy as f32 * 2.0 + jy)
                })
                .collect()
        })
}

/// A locomotion-like directional layout: `k` evenly spaced directions (rotated at random) at
/// walking radius, optionally the same directions again at running radius, optionally idle at
/// the origin, in shuffled order.
fn ring_layout() -> impl Strategy<Value = Vec<Vec2>> {
    (3usize..=8, 0.0f32..std::f32::consts::TAU, 1.0f32..1.5, any::<bool>(), any::<bool>())
        .prop_map(|(k, turn, walk_radius, run, idle)| {
            let mut pts: Vec<Vec2> = Vec::new();
            for i in 0..k {
                let dir = Vec2::from_angle(turn + i as f32 * std::f32::consts::TAU / k as f32);
                pts.push(dir * walk_radius);
                if run {
                    pts.push(dir * 3.5);
                }
            }
            if idle {
                pts.push(Vec2::ZERO);
            }
            pts
        })
        .prop_shuffle()
}

// ---------------------------------------------------------------------------------------------
// Properties: weights partition one for any parameter

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn one_d_weights_partition_one(values in increasing(2..=16).prop_shuffle(), p in parameter()) {
        let space = BlendSpace::one_d(values).unwrap();
        check_partition(&space, p)?;
    }

    #[test]
    fn grid_weights_partition_one(xs in increasing(2..=8), ys in increasing(2..=8), p in parameter()) {
        prop_assume!(xs.len() * ys.len() <= MAX_BLEND_CHILDREN);
        let space = BlendSpace::grid(xs, ys).unwrap();
        check_partition(&space, p)?;
    }

    #[test]
    fn cartesian_weights_partition_one(points in spread_points(2..=16), p in parameter()) {
        let space = BlendSpace::cartesian(points).unwrap();
        check_partition(&space, p)?;
    }

    #[test]
    fn freeform_weights_partition_one(points in spread_points(3..=16), p in parameter()) {
        // A random layout may be (nearly) collinear; that is the one error it may earn.
        match BlendSpace::freeform(points) {
            Ok(space) => check_partition(&space, p)?,
            Err(e) => prop_assert!(matches!(e, BlendSpaceError::Collinear { .. } | BlendSpaceError::Untriangulable { .. }), "{e}"),
        }
    }

    #[test]
    fn directional_weights_partition_one(points in spread_points(2..=16), centre in any::<bool>(), p in parameter()) {
        let mut points = points;
        if centre && points.iter().all(|q| q.length() >= 0.5) {
            points.push(Vec2::ZERO);
        }
        let space = BlendSpace::directional(points).unwrap();
        check_partition(&space, p)?;
    }

    /// Authoring a clip at a point means getting exactly that clip there.
    #[test]
    fn each_child_owns_its_own_point(points in spread_points(3..=16), values in increasing(2..=16).prop_shuffle()) {
        let mut spaces = vec![
            (BlendSpace::cartesian(points.clone()).unwrap(), points.clone()),
            (BlendSpace::directional(points.clone()).unwrap(), points.clone()),
            (BlendSpace::one_d(values.clone()).unwrap(), values.iter().map(|&x| Vec2::new(x, 0.0)).collect()),
        ];
        if let Ok(space) = BlendSpace::freeform(points.clone()) {
            spaces.push((space, points));
        }
        for (space, at) in &spaces {
            for (child, p) in at.iter().enumerate() {
                let w = weights_of(space, *p);
                prop_assert!(w[child] >= 1.0 - 1e-4, "{:?} child {child} at {p}: {w:?}", space.kind());
            }
        }
    }

    #[test]
    fn constructors_never_panic_on_arbitrary_points(
        points in prop::collection::vec((any::<f32>(), any::<f32>()), 0..=70),
        p in parameter(),
    ) {
        let points: Vec<Vec2> = points.into_iter().map(|(x, y)| Vec2::new(x, y)).collect();
        let xs: Vec<f32> = points.iter().map(|q| q.x).collect();
        let spaces = [
            BlendSpace::one_d(xs.clone()),
            BlendSpace::freeform(points.clone()),
            BlendSpace::cartesian(points.clone()),
            BlendSpace::directional(points),
            BlendSpace::grid(xs.clone(), xs),
        ];
        // Whatever they accept must still keep the weights' promise.
        for space in spaces.iter().flatten() {
            check_partition(space, p)?;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Properties: walking a whole path in 1e-3 steps, so that a jump anywhere on it (an edge, a
// branch cut, the hull) is found rather than left to a lucky sample

/// The largest change of any weight between consecutive points `step` apart from `a` to `b`.
fn max_jump_along(space: &BlendSpace, a: Vec2, b: Vec2, step: f32) -> (f32, Vec2) {
    let steps = (a.distance(b) / step).ceil().max(1.0) as usize;
    let mut previous = weights_of(space, a);
    let mut current = previous.clone();
    let mut worst = (0.0f32, a);
    for k in 1..=steps {
        let p = a.lerp(b, k as f32 / steps as f32);
        space.weights(p, &mut current);
        let jump = worst_abs_diff(&previous, &current);
        // A NaN jump replaces a number and stays, so the callers' bounds fail on it.
        if !worst.0.is_nan() && (jump.is_nan() || jump > worst.0) {
            worst = (jump, p);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    worst
}

fn segment() -> impl Strategy<Value = (Vec2, Vec2)> {
    ((-15.0f32..15.0, -15.0f32..15.0), (-15.0f32..15.0, -15.0f32..15.0))
        .prop_map(|((ax, ay), (bx, by))| (Vec2::new(ax, ay), Vec2::new(bx, by)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn one_d_is_continuous_along_a_path(values in increasing(2..=16).prop_shuffle(), (a, b) in segment()) {
        let space = BlendSpace::one_d(values).unwrap();
        let (jump, at) = max_jump_along(&space, a, b, 1e-3);
        prop_assert!(jump <= 0.1, "jump {jump} at {at}");
    }

    #[test]
    fn grid_is_continuous_along_a_path(xs in increasing(2..=8), ys in increasing(2..=8), (a, b) in segment()) {
        prop_assume!(xs.len() * ys.len() <= MAX_BLEND_CHILDREN);
        let space = BlendSpace::grid(xs, ys).unwrap();
        let (jump, at) = max_jump_along(&space, a, b, 1e-3);
        prop_assert!(jump <= 0.1, "jump {jump} at {at}");
    }

    #[test]
    fn cartesian_is_continuous_along_a_path(points in spread_points(2..=16), (a, b) in segment()) {
        let space = BlendSpace::cartesian(points).unwrap();
        let (jump, at) = max_jump_along(&space, a, b, 1e-3);
        prop_assert!(jump <= 0.1, "jump {jump} at {at}");
    }

    #[test]
    fn freeform_is_continuous_along_a_path(points in jittered_lattice(), (a, b) in segment()) {
        let space = BlendSpace::freeform(points).unwrap();
        let (jump, at) = max_jump_along(&space, a, b, 1e-3);
        prop_assert!(jump <= 0.1, "jump {jump} at {at}");
    }

    /// Round a full circle (every direction, so every pair's branch cut is crossed).
    #[test]
    fn directional_is_continuous_round_a_circle(points in ring_layout(), radius in 0.3f32..6.0) {
        let space = BlendSpace::directional(points).unwrap();
        let steps = (std::f32::consts::TAU * radius / 1e-3).ceil() as usize;
        let mut previous = weights_of(&space, Vec2::new(radius, 0.0));
        let mut current = previous.clone();
        for k in 1..=steps {
            let p = Vec2::from_angle(k as f32 * std::f32::consts::TAU / steps as f32) * radius;
            space.weights(p, &mut current);
            let jump = worst_abs_diff(&previous, &current);
            prop_assert!(jump <= 0.1, "jump {jump} at {p}: {previous:?} → {current:?}");
            std::mem::swap(&mut previous, &mut current);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Weights never allocate

#[test]
fn weights_do_not_allocate() {
    let ring: Vec<Vec2> = (0..8).map(|i| Vec2::from_angle(i as f32 * 0.785) * 1.5).collect();
    let spaces = [
        BlendSpace::one_d(vec![0.0, 1.5, 4.0, 7.0]).unwrap(),
        BlendSpace::freeform(ring.clone()).unwrap(),
        BlendSpace::cartesian(ring.clone()).unwrap(),
        BlendSpace::directional(ring).unwrap(),
        BlendSpace::grid(vec![0.0, 1.0, 2.0], vec![0.0, 1.0, 2.0]).unwrap(),
    ];
    let mut out = [0.0f32; 9];
    let queries = [Vec2::new(0.3, -0.2), Vec2::new(9.0, 2.0), Vec2::NAN, Vec2::INFINITY, Vec2::new(-1e30, 0.0)];
    let before = ALLOCATIONS.with(Cell::get);
    for space in &spaces {
        let n = space.num_children();
        for q in queries {
            space.weights(q, &mut out[..n]);
        }
    }
    let after = ALLOCATIONS.with(Cell::get);
    assert_eq!(after - before, 0, "weights() allocated");
}

// ---------------------------------------------------------------------------------------------
// Constructor validity: every invalid setup, one block each

#[test]
fn invalid_setups_are_typed_errors_naming_the_culprit() {
    use BlendSpaceError as E;
    let v = |x: f32, y: f32| Vec2::new(x, y);

    // Too few children, per kind.
    assert_eq!(BlendSpace::one_d(vec![1.0]), Err(E::TooFewChildren { kind: BlendSpaceKind::OneD, got: 1, min: 2 }));
    assert_eq!(
        BlendSpace::freeform(vec![v(0.0, 0.0), v(1.0, 0.0)]),
        Err(E::TooFewChildren { kind: BlendSpaceKind::Freeform, got: 2, min: 3 })
    );
    assert_eq!(
        BlendSpace::cartesian(vec![]),
        Err(E::TooFewChildren { kind: BlendSpaceKind::Cartesian, got: 0, min: 2 })
    );
    assert_eq!(
        BlendSpace::directional(vec![v(1.0, 0.0)]),
        Err(E::TooFewChildren { kind: BlendSpaceKind::Directional, got: 1, min: 2 })
    );

    // Too many children.
    let many: Vec<f32> = (0..=MAX_BLEND_CHILDREN).map(|i| i as f32).collect();
    assert_eq!(
        BlendSpace::one_d(many.clone()),
        Err(E::TooManyChildren { kind: BlendSpaceKind::OneD, got: MAX_BLEND_CHILDREN + 1 })
    );
    let many_2d: Vec<Vec2> = many.iter().map(|&x| v(x, (x * 0.7).sin())).collect();
    assert_eq!(
        BlendSpace::cartesian(many_2d),
        Err(E::TooManyChildren { kind: BlendSpaceKind::Cartesian, got: MAX_BLEND_CHILDREN + 1 })
    );

    // A non-finite point names its child.
    assert!(matches!(BlendSpace::one_d(vec![0.0, 1.0, f32::NAN]), Err(E::NonFinitePoint { child: 2, .. })));
    assert!(matches!(
        BlendSpace::freeform(vec![v(0.0, 0.0), v(f32::INFINITY, 0.0), v(0.0, 1.0)]),
        Err(E::NonFinitePoint { child: 1, .. })
    ));
    assert!(matches!(
        BlendSpace::directional(vec![v(0.0, 1.0), v(0.0, f32::NEG_INFINITY)]),
        Err(E::NonFinitePoint { child: 1, .. })
    ));

    // Duplicates name both children, in any order given.
    assert_eq!(
        BlendSpace::one_d(vec![4.0, 1.5, 0.0, 1.5]),
        Err(E::DuplicatePoint { first: 1, child: 3, point: v(1.5, 0.0) })
    );
    assert_eq!(
        BlendSpace::cartesian(vec![v(0.0, 0.0), v(2.0, 3.0), v(5.0, 5.0), v(2.0, 3.0)]),
        Err(E::DuplicatePoint { first: 1, child: 3, point: v(2.0, 3.0) })
    );
    // Closer than a millionth of the extent is the same point.
    assert!(matches!(
        BlendSpace::freeform(vec![v(0.0, 0.0), v(100.0, 0.0), v(0.0, 100.0), v(100.0, 1e-6)]),
        Err(E::DuplicatePoint { first: 1, child: 3, .. })
    ));
    // Two idle children at the origin of a directional space.
    assert!(matches!(
        BlendSpace::directional(vec![v(0.0, 0.0), v(0.0, 1.0), v(0.0, 0.0)]),
        Err(E::DuplicatePoint { first: 0, child: 2, .. })
    ));

    // Freeform children all on one line (any orientation) have no triangle.
    assert_eq!(
        BlendSpace::freeform(vec![v(0.0, 0.0), v(1.0, 2.0), v(3.0, 6.0), v(-1.0, -2.0)]),
        Err(E::Collinear { count: 4 })
    );
    // The same layout is fine as a gradient band.
    assert!(BlendSpace::cartesian(vec![v(0.0, 0.0), v(1.0, 2.0), v(3.0, 6.0), v(-1.0, -2.0)]).is_ok());

    // Grid: an axis with fewer than two values.
    assert_eq!(BlendSpace::grid(vec![0.0], vec![0.0, 1.0]), Err(E::GridAxisTooShort { axis: GridAxis::X, got: 1 }));
    assert_eq!(BlendSpace::grid(vec![0.0, 1.0], vec![]), Err(E::GridAxisTooShort { axis: GridAxis::Y, got: 0 }));
    // Grid: more cells than children allowed.
    let nine: Vec<f32> = (0..9).map(|i| i as f32).collect();
    assert_eq!(
        BlendSpace::grid(nine.clone(), nine[..8].to_vec()),
        Err(E::TooManyChildren { kind: BlendSpaceKind::Grid, got: 72 })
    );
    // Grid: a non-finite coordinate.
    assert!(matches!(
        BlendSpace::grid(vec![0.0, 1.0], vec![0.0, f32::NAN, 2.0]),
        Err(E::NonFiniteGridValue { axis: GridAxis::Y, index: 1, .. })
    ));
    // Grid: coordinates that repeat or fall.
    assert_eq!(
        BlendSpace::grid(vec![0.0, 1.0, 1.0], vec![0.0, 1.0]),
        Err(E::GridNotIncreasing { axis: GridAxis::X, index: 2, value: 1.0, previous: 1.0 })
    );
    assert_eq!(
        BlendSpace::grid(vec![0.0, 1.0], vec![2.0, 1.0]),
        Err(E::GridNotIncreasing { axis: GridAxis::Y, index: 1, value: 1.0, previous: 2.0 })
    );
}

#[test]
fn error_messages_say_where_and_what() {
    let e = BlendSpace::one_d(vec![4.0, 1.5, 0.0, 1.5]).unwrap_err();
    assert_eq!(e.to_string(), "child 3 sits at the same point [1.5, 0] as child 1");
    let e = BlendSpace::grid(vec![0.0, 1.0], vec![2.0, 1.0]).unwrap_err();
    assert_eq!(e.to_string(), "grid y values must strictly increase, but value 1 (1) follows 2");
    let e = BlendSpace::freeform(vec![Vec2::ZERO, Vec2::X]).unwrap_err();
    assert_eq!(e.to_string(), "a freeform 2D blend space needs at least 3 children, got 2");
}

/// A long thin Delaunay triangle (children 0 and 3 close together) once cost child 3 2e-4 of
/// its weight at its own point: f32 rounding of the parameter, amplified by the triangle's
/// large inverse. Found by `each_child_owns_its_own_point`.
#[test]
fn freeform_child_owns_its_point_in_a_thin_triangle() {
    let points = vec![
        Vec2::new(-5.0499806, -6.766819),
        Vec2::new(-2.1434436, 4.1555495),
        Vec2::new(0.0, -7.5902834),
        Vec2::new(-4.9026666, -6.2153363),
        Vec2::new(5.3513126, 0.0),
    ];
    let space = BlendSpace::freeform(points.clone()).unwrap();
    for (child, p) in points.iter().enumerate() {
        let w = weights_of(&space, *p);
        assert!(w[child] >= 1.0 - 1e-6, "child {child} at {p}: {w:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Extreme but finite layouts: points anywhere in f32's range, spans beyond `f32::MAX`

/// Any finite coordinate, weighted towards the ends of f32's range and the tiny ones.
fn extreme_coordinate() -> impl Strategy<Value = f32> {
    prop_oneof![
        2 => Just(f32::MAX),
        2 => Just(-f32::MAX),
        2 => (0.5f32..1.0).prop_map(|f| f * f32::MAX),
        2 => (-1.0f32..-0.5).prop_map(|f| f * f32::MAX),
        1 => Just(f32::MIN_POSITIVE),
        1 => Just(-f32::from_bits(1)),
        2 => any::<f32>().prop_filter("finite", |v| v.is_finite()),
        1 => -30.0f32..30.0,
    ]
}

/// Distinct finite values, sorted: strictly increasing, as the grid wants them.
fn extreme_increasing(len: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Vec<f32>> {
    prop::collection::vec(extreme_coordinate(), len).prop_filter_map("fewer than 2 distinct values", |mut v| {
        v.sort_by(f32::total_cmp);
        v.dedup();
        (v.len() >= 2).then_some(v)
    })
}

/// Non-negative, finite, summing to one within `tolerance`, with a message saying where.
fn check_partition_within(space: &BlendSpace, p: Vec2, tolerance: f32) -> Result<(), TestCaseError> {
    let w = weights_of(space, p);
    prop_assert!(w.iter().all(|v| v.is_finite() && *v >= 0.0), "{:?} at {p}: {w:?}", space.kind());
    let sum: f32 = w.iter().sum();
    prop_assert!((sum - 1.0).abs() <= tolerance, "{:?} at {p}: sum {sum}, {w:?}", space.kind());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// 1D and grid weights are at most four products of fractions: they sum to one within 1e-6
    /// wherever the points lie and whatever the parameter.
    #[test]
    fn one_d_and_grid_partition_one_on_extreme_points(
        xs in extreme_increasing(2..=8),
        ys in extreme_increasing(2..=8),
        p in (extreme_coordinate(), extreme_coordinate()).prop_map(|(x, y)| Vec2::new(x, y)),
        q in parameter(),
    ) {
        let one_d = BlendSpace::one_d(xs.clone()).unwrap();
        let grid = BlendSpace::grid(xs, ys).unwrap();
        for at in [p, q] {
            check_partition_within(&one_d, at, 1e-6)?;
            check_partition_within(&grid, at, 1e-6)?;
        }
    }

    /// The 2D spaces on points anywhere in f32's range; a layout the constructor refuses must
    /// be refused with a typed error, never a panic.
    #[test]
    fn two_d_spaces_partition_one_on_extreme_points(
        points in prop::collection::vec((extreme_coordinate(), extreme_coordinate()), 2..=12),
        p in (extreme_coordinate(), extreme_coordinate()).prop_map(|(x, y)| Vec2::new(x, y)),
        q in parameter(),
    ) {
        let points: Vec<Vec2> = points.into_iter().map(|(x, y)| Vec2::new(x, y)).collect();
        let spaces = [BlendSpace::freeform(points.clone()), BlendSpace::cartesian(points.clone()), BlendSpace::directional(points)];
        for space in spaces.iter().flatten() {
            for at in [p, q] {
                check_partition(space, at)?;
            }
        }
    }
}

/// Children at `-f32::MAX` and `f32::MAX` are more than `f32::MAX` apart: the 1D and grid
/// fraction `(v − a) / (b − a)` was `∞ / ∞`, NaN weights at the far end (and the frame that
/// sampled them refused), and `x / ∞ = 0` everywhere else, all weight on the first child.
#[test]
fn one_d_and_grid_spanning_more_than_f32_max_weigh_exactly() {
    let one_d = BlendSpace::one_d(vec![-f32::MAX, f32::MAX]).unwrap();
    assert_eq!(weights_of(&one_d, Vec2::new(f32::MAX, 0.0)), [0.0, 1.0]);
    assert_eq!(weights_of(&one_d, Vec2::ZERO), [0.5, 0.5]);
    assert_eq!(weights_of(&one_d, Vec2::new(f32::MAX / 2.0, 0.0)), [0.25, 0.75]);
    let grid = BlendSpace::grid(vec![-f32::MAX, f32::MAX], vec![-f32::MAX, 0.0, f32::MAX]).unwrap();
    assert_eq!(weights_of(&grid, Vec2::new(f32::MAX, f32::MAX)), [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
    assert_eq!(weights_of(&grid, Vec2::new(0.0, -f32::MAX / 2.0)), [0.25, 0.25, 0.25, 0.25, 0.0, 0.0]);
}
