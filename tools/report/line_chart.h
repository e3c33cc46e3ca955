// LineChart: series of (step, value) points drawn as one inline SVG, for strata_report's page.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace strata::tools {

struct Series {
  std::string name;                               // the legend's text (a report tag)
  std::vector<std::pair<double, double>> points;  // (x, y), x ascending
};

struct LineChart {
  std::string id;       // the figure's id in the page ("loss", "memory_by_category")
  std::string title;    // above the plot
  std::string x_label;  // "step"
  std::string y_label;  // "MB", "seconds"
  std::vector<Series> series;
  bool y_from_zero = true;  // false: the axis spans the values only (a loss far from 0)

  size_t num_points() const;
  // <figure class="plot" id=... data-series=N data-points=M> with an <svg> of one <polyline> per
  // series (a single point is drawn as a dot), axes with ticks, and a legend; then a <figcaption>.
  // Text is escaped for HTML.
  std::string to_html() const;
};

std::string html_escape(const std::string& text);

}  // namespace strata::tools
