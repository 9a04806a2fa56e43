//! Blend-space weights checked against hand-worked cases, every kind.

use super::delaunay::{boundary_edges, delaunay};
use super::*;

fn weights_of(space: &BlendSpace, p: Vec2) -> Vec<f32> {
    let mut w = vec![f32::NAN; space.num_children()];
    space.weights(p, &mut w);
    w
}

fn assert_weights(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() < 1e-5, "child {i}: got {g}, want {w} (all: {got:?})");
    }
}

fn square() -> Vec<Vec2> {
    vec![Vec2::new(0.0, 0.0), Vec2::new(1.0, 0.0), Vec2::new(0.0, 1.0), Vec2::new(1.0, 1.0)]
}

#[test]
fn one_d_seed_example_walk_run_at_three() {
    // Seed 001: walk at 1.5 m/s, run at 4.0 m/s, moving at 3.0 m/s → 0.4 walk, 0.6 run.
    let space = BlendSpace::one_d(vec![1.5, 4.0]).unwrap();
    assert_weights(&weights_of(&space, Vec2::new(3.0, 0.0)), &[0.4, 0.6]);
    assert_weights(&weights_of(&space, Vec2::new(4.0, 0.0)), &[0.0, 1.0]);
    assert_weights(&weights_of(&space, Vec2::new(1.5, 0.0)), &[1.0, 0.0]);
}

#[test]
fn one_d_clamps_at_the_ends_and_ignores_y() {
    let space = BlendSpace::one_d(vec![0.0, 1.5, 4.0]).unwrap();
    assert_weights(&weights_of(&space, Vec2::new(-3.0, 7.0)), &[1.0, 0.0, 0.0]);
    assert_weights(&weights_of(&space, Vec2::new(10.0, -7.0)), &[0.0, 0.0, 1.0]);
    assert_weights(&weights_of(&space, Vec2::new(f32::INFINITY, 0.0)), &[0.0, 0.0, 1.0]);
    assert_weights(&weights_of(&space, Vec2::new(f32::NEG_INFINITY, 0.0)), &[1.0, 0.0, 0.0]);
    // NaN reads as 0: exactly on the first child.
    assert_weights(&weights_of(&space, Vec2::new(f32::NAN, 0.0)), &[1.0, 0.0, 0.0]);
}

#[test]
fn one_d_accepts_children_in_any_order() {
    let space = BlendSpace::one_d(vec![4.0, 0.0, 1.5]).unwrap();
    // Between 1.5 (child 2) and 4.0 (child 0).
    assert_weights(&weights_of(&space, Vec2::new(3.0, 0.0)), &[0.6, 0.0, 0.4]);
    // Between 0.0 (child 1) and 1.5 (child 2).
    assert_weights(&weights_of(&space, Vec2::new(0.5, 0.0)), &[0.0, 2.0 / 3.0, 1.0 / 3.0]);
}

#[test]
fn four_corner_cartesian_and_grid_share_centre_and_corners() {
    let cart = BlendSpace::cartesian(square()).unwrap();
    let grid = BlendSpace::grid(vec![0.0, 1.0], vec![0.0, 1.0]).unwrap();
    for space in [&cart, &grid] {
        assert_weights(&weights_of(space, Vec2::splat(0.5)), &[0.25; 4]);
        for (child, corner) in square().into_iter().enumerate() {
            let mut want = [0.0; 4];
            want[child] = 1.0;
            assert_weights(&weights_of(space, corner), &want);
        }
    }
}

#[test]
fn grid_is_bilinear_row_major_and_clamped() {
    let grid = BlendSpace::grid(vec![0.0, 1.0, 3.0], vec![-1.0, 1.0]).unwrap();
    // x = 2 is halfway between columns 1 and 2; y = 0.5 is 3/4 of the way up.
    let mut want = [0.0; 6];
    want[1] = 0.5 * 0.25;
    want[2] = 0.5 * 0.25;
    want[4] = 0.5 * 0.75;
    want[5] = 0.5 * 0.75;
    assert_weights(&weights_of(&grid, Vec2::new(2.0, 0.5)), &want);
    // Far outside: clamped onto the corner (3, −1), child 2.
    assert_weights(&weights_of(&grid, Vec2::new(50.0, -50.0)), &[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]);
}

#[test]
fn cartesian_on_a_line_matches_one_d() {
    let cart = BlendSpace::cartesian(vec![Vec2::new(1.5, 0.0), Vec2::new(4.0, 0.0)]).unwrap();
    assert_weights(&weights_of(&cart, Vec2::new(3.0, 0.0)), &[0.4, 0.6]);
    // Off the line, only the projection counts.
    assert_weights(&weights_of(&cart, Vec2::new(3.0, 9.0)), &[0.4, 0.6]);
}

#[test]
fn freeform_reproduces_barycentric_coordinates() {
    let space = BlendSpace::freeform(vec![Vec2::new(0.0, 0.0), Vec2::new(4.0, 0.0), Vec2::new(0.0, 2.0)]).unwrap();
    // p = 0.5·A + 0.25·B + 0.25·C = (1.0, 0.5).
    assert_weights(&weights_of(&space, Vec2::new(1.0, 0.5)), &[0.5, 0.25, 0.25]);
}

#[test]
fn freeform_on_a_child_gives_it_everything() {
    let mut points = square();
    points.push(Vec2::new(0.5, 0.5));
    points.push(Vec2::new(2.0, 0.3));
    let space = BlendSpace::freeform(points.clone()).unwrap();
    for (child, p) in points.iter().enumerate() {
        let mut want = vec![0.0; points.len()];
        want[child] = 1.0;
        assert_weights(&weights_of(&space, *p), &want);
    }
}

#[test]
fn freeform_outside_the_hull_projects_onto_the_nearest_edge() {
    let space = BlendSpace::freeform(square()).unwrap();
    // Left of the left edge (0,0)–(0,1) at height 0.3: as at (0, 0.3).
    let outside = weights_of(&space, Vec2::new(-2.0, 0.3));
    assert_weights(&outside, &[0.7, 0.0, 0.3, 0.0]);
    assert_weights(&outside, &weights_of(&space, Vec2::new(0.0, 0.3)));
    // Beyond a corner: that corner alone.
    assert_weights(&weights_of(&space, Vec2::new(3.0, 3.0)), &[0.0, 0.0, 0.0, 1.0]);
}

#[test]
fn delaunay_of_square_with_centre_is_four_triangles_round_the_centre() {
    let mut points = square();
    points.push(Vec2::new(0.5, 0.5));
    let local: Vec<DVec2> = points.iter().map(|p| p.as_dvec2()).collect();
    let triangles = delaunay(&local).unwrap();
    assert_eq!(triangles.len(), 4, "{triangles:?}");
    assert!(triangles.iter().all(|t| t.contains(&4)), "{triangles:?}");
    assert_eq!(boundary_edges(&triangles).len(), 4);
}

#[test]
fn delaunay_flips_the_sweeps_long_diagonal() {
    // Sorted by x the sweep first builds (0, 1, 2), so its diagonal is the long 1–2; the
    // short 0–3 is the Delaunay one (3 lies inside the circumcircle of 0, 1, 2).
    let local = [DVec2::new(0.0, 0.0), DVec2::new(0.4, 1.0), DVec2::new(0.6, -1.0), DVec2::new(1.0, 0.0)];
    let triangles = delaunay(&local).unwrap();
    assert_eq!(triangles.len(), 2);
    assert!(triangles.iter().all(|t| t.contains(&0) && t.contains(&3)), "{triangles:?}");
}

#[test]
fn directional_at_a_child_with_its_speed_gives_it_nearly_everything() {
    let points = vec![
        Vec2::ZERO,
        Vec2::new(0.0, 1.5),
        Vec2::new(1.2, 0.0),
        Vec2::new(0.0, -1.0),
        Vec2::new(-1.2, 0.0),
        Vec2::new(0.0, 4.0),
    ];
    let space = BlendSpace::directional(points.clone()).unwrap();
    for (child, p) in points.iter().enumerate() {
        let w = weights_of(&space, *p);
        assert!(w[child] > 0.999, "child {child} at {p}: {w:?}");
    }
    // Halfway in speed between walk forward and run forward, straight ahead.
    let w = weights_of(&space, Vec2::new(0.0, 2.75));
    assert!((w[1] - 0.5).abs() < 1e-4 && (w[5] - 0.5).abs() < 1e-4, "{w:?}");
}

#[test]
fn directional_centre_child_dominates_near_the_origin_in_every_direction() {
    let points = vec![Vec2::new(0.0, 1.0), Vec2::new(1.0, 0.0), Vec2::ZERO, Vec2::new(0.0, -1.0), Vec2::new(-1.0, 0.0)];
    let space = BlendSpace::directional(points).unwrap();
    assert_weights(&weights_of(&space, Vec2::ZERO), &[0.0, 0.0, 1.0, 0.0, 0.0]);
    for k in 0..16 {
        let a = k as f32 * std::f32::consts::TAU / 16.0;
        let w = weights_of(&space, Vec2::from_angle(a) * 0.1);
        assert!(w[2] > 0.8, "direction {a} rad: {w:?}");
    }
}

#[test]
fn directional_blends_along_the_arc_between_two_directions() {
    let space = BlendSpace::directional(vec![Vec2::new(1.0, 0.0), Vec2::new(0.0, 1.0)]).unwrap();
    // On the unit circle at 45°: half each. At 30°: a third of the way from +x to +y.
    assert_weights(&weights_of(&space, Vec2::from_angle(std::f32::consts::FRAC_PI_4)), &[0.5, 0.5]);
    assert_weights(&weights_of(&space, Vec2::from_angle(std::f32::consts::FRAC_PI_6)), &[2.0 / 3.0, 1.0 / 3.0]);
}

#[test]
fn wrongly_sized_output_is_filled_without_panicking() {
    let space = BlendSpace::one_d(vec![0.0, 1.0]).unwrap();
    let mut short = [9.0f32; 1];
    space.weights(Vec2::new(0.25, 0.0), &mut short);
    assert_eq!(short, [0.75]);
    let mut long = [9.0f32; 3];
    space.weights(Vec2::new(0.25, 0.0), &mut long);
    assert_eq!(long, [0.75, 0.25, 0.0]);
}

#[test]
fn dimensions_and_counts() {
    let one = BlendSpace::one_d(vec![0.0, 1.0, 2.0]).unwrap();
    assert_eq!((one.dimensions(), one.num_children(), one.kind()), (1, 3, BlendSpaceKind::OneD));
    let grid = BlendSpace::grid(vec![0.0, 1.0, 2.0], vec![0.0, 1.0]).unwrap();
    assert_eq!((grid.dimensions(), grid.num_children()), (2, 6));
    let free = BlendSpace::freeform(square()).unwrap();
    assert_eq!((free.dimensions(), free.num_children()), (2, 4));
}
