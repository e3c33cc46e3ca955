#include "tools/report/line_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace strata::tools {

namespace {

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string number(double v) {
  char buf[32];
  if (v == 0)
    return "0";
  else if (std::fabs(v) >= 1e5 || std::fabs(v) < 1e-3)
    std::snprintf(buf, sizeof buf, "%.2e", v);
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// Four steps of 1, 2 or 5 times a power of ten that cover [lo, hi].
double tick_step(double lo, double hi) {
  const double raw = (hi - lo) / 4;
  if (raw <= 0) return 1;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

}  // namespace

std::string html_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

size_t LineChart::num_points() const {
  size_t n = 0;
  for (const Series& s : series) n += s.points.size();
  return n;
}

std::string LineChart::to_html() const {
  const double W = 620, H = 300, L = 70, R = 200, T = 16, B = 44;
  double x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  bool first = true;
  for (const Series& s : series)
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(y)) continue;
      if (first) x0 = x1 = x, y0 = y1 = y, first = false;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  if (y_from_zero) y0 = std::min(y0, 0.0), y1 = std::max(y1, 0.0);
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= y0) y1 = y0 + (y0 == 0 ? 1 : std::fabs(y0) * 0.1);
  const double ystep = tick_step(y0, y1);
  y0 = std::floor(y0 / ystep) * ystep, y1 = std::ceil(y1 / ystep) * ystep;
  auto px = [&](double x) { return L + (W - L - R) * (x - x0) / (x1 - x0); };
  auto py = [&](double y) { return H - B - (H - T - B) * (y - y0) / (y1 - y0); };

  std::ostringstream f;
  f << "<figure class=\"plot\" id=\"" << html_escape(id) << "\" data-series=\"" << series.size()
    << "\" data-points=\"" << num_points() << "\">\n";
  f << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 "
    << W << " " << H << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  f << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B
    << "\" stroke=\"#333\"/>\n";
  f << "<line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\"" << H - B
    << "\" stroke=\"#333\"/>\n";
  for (double v = y0; v <= y1 + ystep * 1e-6; v += ystep) {
    f << "<line x1=\"" << L << "\" y1=\"" << py(v) << "\" x2=\"" << W - R << "\" y2=\"" << py(v)
      << "\" stroke=\"#eee\"/>\n";
    f << "<text x=\"" << L - 6 << "\" y=\"" << py(v) + 4 << "\" text-anchor=\"end\">" << number(v)
      << "</text>\n";
  }
  const double xstep = std::max(1.0, tick_step(x0, x1));
  for (double v = std::ceil(x0 / xstep) * xstep; v <= x1 + 1e-9; v += xstep)
    f << "<text x=\"" << px(v) << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\">" << number(v)
      << "</text>\n";
  f << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 8 << "\" text-anchor=\"middle\">"
    << html_escape(x_label) << "</text>\n";
  f << "<text x=\"14\" y=\"" << (H - B + T) / 2 << "\" transform=\"rotate(-90 14 " << (H - B + T) / 2
    << ")\" text-anchor=\"middle\">" << html_escape(y_label) << "</text>\n";
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    const char* color = kColors[i % (sizeof kColors / sizeof kColors[0])];
    if (s.points.size() == 1) {
      f << "<circle class=\"series\" cx=\"" << px(s.points[0].first) << "\" cy=\"" << py(s.points[0].second)
        << "\" r=\"3\" fill=\"" << color << "\"/>\n";
    } else {
      f << "<polyline class=\"series\" fill=\"none\" stroke=\"" << color
        << "\" stroke-width=\"1.5\" points=\"";
      for (const auto& [x, y] : s.points)
        if (std::isfinite(y)) f << px(x) << "," << py(y) << " ";
      f << "\"/>\n";
    }
    f << "<text x=\"" << W - R + 10 << "\" y=\"" << T + 10 + 16 * double(i) << "\" fill=\"" << color << "\">"
      << html_escape(s.name) << "</text>\n";
  }
  f << "</svg>\n<figcaption>" << html_escape(title) << "</figcaption>\n</figure>\n";
  return f.str();
}

}  // namespace strata::tools
