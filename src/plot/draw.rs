//! Two painters behind one trait: an RGB raster (for PNG) and an SVG writer, so the timeline's
//! layout is written once and both outputs agree to the pixel grid.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::font;

/// An sRGB colour.
pub type Rgb = [u8; 3];

/// Spacing of hatch stripes, pixels along x; stripes are `HATCH_WIDTH` wide.
pub const HATCH_PERIOD: i32 = 6;
/// Width of a hatch stripe, pixels.
pub const HATCH_WIDTH: i32 = 2;

/// What the timeline draws with. Coordinates are pixels from the top-left corner.
pub trait Painter {
    /// A filled rectangle.
    fn rect(&mut self, x: f32, y: f32, w: f32, h: f32, colour: Rgb);
    /// Diagonal stripes (rising to the right) inside a rectangle; the stripes line up across
    /// neighbouring rectangles, so a span of frames reads as one hatched block.
    fn hatch(&mut self, x: f32, y: f32, w: f32, h: f32, colour: Rgb);
    /// A polyline one pixel wide.
    fn polyline(&mut self, points: &[(f32, f32)], colour: Rgb);
    /// A filled triangle.
    fn triangle(&mut self, points: [(f32, f32); 3], colour: Rgb);
    /// Text with its top-left corner at (x, y), in the 5×7 font's metrics.
    fn text(&mut self, x: f32, y: f32, text: &str, colour: Rgb);
}

/// An RGB image in memory.
#[derive(Clone, Debug)]
pub struct Raster {
    width: u32,
    height: u32,
    pixels: Vec<u8>,
}

impl Raster {
    /// A `width × height` image filled with `background`.
    #[must_use]
    pub fn new(width: u32, height: u32, background: Rgb) -> Self {
        let pixels = background.iter().copied().cycle().take(width as usize * height as usize * 3).collect();
        Self { width, height, pixels }
    }

    /// Width, pixels.
    #[must_use]
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height, pixels.
    #[must_use]
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Row-major RGB bytes.
    #[must_use]
    pub fn pixels(&self) -> &[u8] {
        &self.pixels
    }

    fn put(&mut self, x: i32, y: i32, colour: Rgb) {
        if x >= 0 && y >= 0 && (x as u32) < self.width && (y as u32) < self.height {
            let i = (y as usize * self.width as usize + x as usize) * 3;
            self.pixels[i..i + 3].copy_from_slice(&colour);
        }
    }

    /// The pixel rows/columns a float rectangle covers: edges rounded, so rectangles sharing
    /// an edge neither overlap nor leave a gap.
    fn span(a: f32, len: f32) -> (i32, i32) {
        (a.round() as i32, (a + len).round() as i32)
    }
}

impl Painter for Raster {
    fn rect(&mut self, x: f32, y: f32, w: f32, h: f32, colour: Rgb) {
        let (x0, x1) = Self::span(x, w);
        let (y0, y1) = Self::span(y, h);
        for py in y0.max(0)..y1.min(self.height as i32) {
            for px in x0.max(0)..x1.min(self.width as i32) {
                self.put(px, py, colour);
            }
        }
    }

    fn hatch(&mut self, x: f32, y: f32, w: f32, h: f32, colour: Rgb) {
        let (x0, x1) = Self::span(x, w);
        let (y0, y1) = Self::span(y, h);
        for py in y0.max(0)..y1.min(self.height as i32) {
            for px in x0.max(0)..x1.min(self.width as i32) {
                if (px + py).rem_euclid(HATCH_PERIOD) < HATCH_WIDTH {
                    self.put(px, py, colour);
                }
            }
        }
    }

    fn polyline(&mut self, points: &[(f32, f32)], colour: Rgb) {
        for pair in points.windows(2) {
            let [(ax, ay), (bx, by)] = [pair[0], pair[1]];
            let steps = (bx - ax).abs().max((by - ay).abs()).ceil().max(1.0) as i32;
            for s in 0..=steps {
                let t = s as f32 / steps as f32;
                self.put((ax + (bx - ax) * t).round() as i32, (ay + (by - ay) * t).round() as i32, colour);
            }
        }
    }

    fn triangle(&mut self, points: [(f32, f32); 3], colour: Rgb) {
        let min_x = points.iter().map(|p| p.0).fold(f32::INFINITY, f32::min).floor() as i32;
        let max_x = points.iter().map(|p| p.0).fold(f32::NEG_INFINITY, f32::max).ceil() as i32;
        let min_y = points.iter().map(|p| p.1).fold(f32::INFINITY, f32::min).floor() as i32;
        let max_y = points.iter().map(|p| p.1).fold(f32::NEG_INFINITY, f32::max).ceil() as i32;
        let edge = |a: (f32, f32), b: (f32, f32), p: (f32, f32)| (b.0 - a.0) * (p.1 - a.1) - (b.1 - a.1) * (p.0 - a.0);
        let [a, b, c] = points;
        for py in min_y..=max_y {
            for px in min_x..=max_x {
                let p = (px as f32 + 0.5, py as f32 + 0.5);
                let (e0, e1, e2) = (edge(a, b, p), edge(b, c, p), edge(c, a, p));
                if (e0 >= 0.0 && e1 >= 0.0 && e2 >= 0.0) || (e0 <= 0.0 && e1 <= 0.0 && e2 <= 0.0) {
                    self.put(px, py, colour);
                }
            }
        }
    }

    fn text(&mut self, x: f32, y: f32, text: &str, colour: Rgb) {
        let (x0, y0) = (x.round() as i32, y.round() as i32);
        for (i, c) in text.chars().enumerate() {
            let gx = x0 + i as i32 * font::ADVANCE as i32;
            for (col, bits) in font::glyph(c).iter().enumerate() {
                for row in 0..font::GLYPH_H as i32 {
                    if bits >> row & 1 == 1 {
                        self.put(gx + col as i32, y0 + row, colour);
                    }
                }
            }
        }
    }
}

/// An SVG document being written.
#[derive(Clone, Debug)]
pub struct Svg {
    body: String,
    patterns: BTreeSet<String>,
    width: u32,
    height: u32,
}

fn hex(c: Rgb) -> String {
    format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2])
}

/// Escapes text for SVG character data and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            // XML 1.0 refuses most control characters even escaped.
            c if c.is_control() => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

impl Svg {
    /// An empty `width × height` document with a `background` fill.
    #[must_use]
    pub fn new(width: u32, height: u32, background: Rgb) -> Self {
        let mut svg = Self { body: String::new(), patterns: BTreeSet::new(), width, height };
        svg.rect(0.0, 0.0, width as f32, height as f32, background);
        svg
    }

    /// The finished document.
    #[must_use]
    pub fn finish(self) -> String {
        let mut out = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" shape-rendering=\"crispEdges\">\n",
            w = self.width,
            h = self.height
        );
        if !self.patterns.is_empty() {
            out.push_str("<defs>\n");
            for colour in &self.patterns {
                // A stripe rising to the right, as the raster's (x + y) mod period.
                let _ = writeln!(
                    out,
                    "<pattern id=\"hatch-{id}\" width=\"{p}\" height=\"{p}\" patternUnits=\"userSpaceOnUse\"><path d=\"M0,{p} L{p},0 M-1,1 L1,-1 M{q},{r} L{r},{q}\" stroke=\"#{id}\" stroke-width=\"{sw}\"/></pattern>",
                    id = colour,
                    p = HATCH_PERIOD,
                    q = HATCH_PERIOD - 1,
                    r = HATCH_PERIOD + 1,
                    sw = HATCH_WIDTH as f32 * std::f32::consts::FRAC_1_SQRT_2,
                );
            }
            out.push_str("</defs>\n");
        }
        out.push_str(&self.body);
        out.push_str("</svg>\n");
        out
    }
}

impl Painter for Svg {
    fn rect(&mut self, x: f32, y: f32, w: f32, h: f32, colour: Rgb) {
        let _ = writeln!(
            self.body,
            "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"{}\"/>",
            w.max(0.0),
            h.max(0.0),
            hex(colour)
        );
    }

    fn hatch(&mut self, x: f32, y: f32, w: f32, h: f32, colour: Rgb) {
        let id = hex(colour)[1..].to_owned();
        let _ = writeln!(
            self.body,
            "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"url(#hatch-{id})\"/>",
            w.max(0.0),
            h.max(0.0)
        );
        self.patterns.insert(id);
    }

    fn polyline(&mut self, points: &[(f32, f32)], colour: Rgb) {
        let pts: Vec<String> = points.iter().map(|(x, y)| format!("{x:.2},{y:.2}")).collect();
        let _ = writeln!(
            self.body,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.2\" shape-rendering=\"geometricPrecision\"/>",
            pts.join(" "),
            hex(colour)
        );
    }

    fn triangle(&mut self, points: [(f32, f32); 3], colour: Rgb) {
        let [a, b, c] = points;
        let _ = writeln!(
            self.body,
            "<polygon points=\"{:.2},{:.2} {:.2},{:.2} {:.2},{:.2}\" fill=\"{}\"/>",
            a.0,
            a.1,
            b.0,
            b.1,
            c.0,
            c.1,
            hex(colour)
        );
    }

    fn text(&mut self, x: f32, y: f32, text: &str, colour: Rgb) {
        // The raster font's cap height is 7 px; a 9 px monospace font with its baseline at the
        // glyph bottom lines up with it.
        let _ = writeln!(
            self.body,
            "<text x=\"{x:.2}\" y=\"{:.2}\" font-family=\"monospace\" font-size=\"9\" fill=\"{}\">{}</text>",
            y + font::GLYPH_H as f32,
            hex(colour),
            escape(text)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbouring_rectangles_share_edges_without_gaps() {
        let mut r = Raster::new(10, 1, [0, 0, 0]);
        r.rect(0.0, 0.0, 3.4, 1.0, [255, 0, 0]);
        r.rect(3.4, 0.0, 3.3, 1.0, [0, 255, 0]);
        r.rect(6.7, 0.0, 3.3, 1.0, [0, 0, 255]);
        let colours: Vec<&[u8]> = r.pixels().chunks(3).collect();
        assert!(colours.iter().all(|c| *c != [0, 0, 0]), "a gap: {colours:?}");
        assert_eq!(colours[2], [255, 0, 0]);
        assert_eq!(colours[3], [0, 255, 0]);
    }

    #[test]
    fn svg_text_is_escaped() {
        let mut s = Svg::new(10, 10, [255, 255, 255]);
        s.text(0.0, 0.0, "a<b & \"c\"", [0, 0, 0]);
        let doc = s.finish();
        assert!(doc.contains("a&lt;b &amp; &quot;c&quot;"), "{doc}");
    }
}
