// Package dashboard holds the sale dashboard's page, embedded in the
// binary: one HTML page, its script and its style sheet, with no other
// asset and no request to any host but the server (httpapi serves them
// under /admin/dashboard with a strict Content Security Policy). The
// sparklines and bars are plain SVG drawn by the script: a chart library
// (the bench report's 1 MiB ECharts) would be most of the page for a few
// polylines and rectangles.
package dashboard

import "embed"

// Files are index.html, app.js and app.css.
//
//go:embed index.html app.js app.css
var Files embed.FS
