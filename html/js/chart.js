// chart.js -- a line chart on a canvas: one line per series over a time
// window ending now, a y axis in bytes per second scaled to the highest
// point, drawn at the screen's pixel density
"use strict";

import { bytes } from "./ui.js";

// canvas: the element; window: seconds shown; samples: [{t (ms), v: {key:
// number}}] oldest first; series: [{key, label, colour}]
export function drawChart(canvas, window, samples, series) {
  const ratio = globalThis.devicePixelRatio || 1;
  const w = canvas.clientWidth || canvas.width;
  const h = canvas.clientHeight || canvas.height;

  if (canvas.width !== Math.round(w * ratio)) {
    canvas.width = Math.round(w * ratio);
    canvas.height = Math.round(h * ratio);
  }

  const g = canvas.getContext("2d");
  g.setTransform(ratio, 0, 0, ratio, 0, 0);
  g.clearRect(0, 0, w, h);

  const left = 70, right = 10, top = 10, bottom = 22;
  const pw = w - left - right, ph = h - top - bottom;
  const now = samples.length ? samples[samples.length - 1].t : Date.now();

  let max = 1024;
  for (const s of samples) {
    for (const { key } of series) max = Math.max(max, s.v[key] || 0);
  }
  max *= 1.1;

  g.font = "11px system-ui, sans-serif";
  g.fillStyle = "#4a5468";
  g.strokeStyle = "#e4e7ec";
  g.lineWidth = 1;

  for (let i = 0; i <= 4; i++) {
    const y = top + ph - (ph * i) / 4;
    g.beginPath();
    g.moveTo(left, y);
    g.lineTo(left + pw, y);
    g.stroke();
    g.textAlign = "right";
    g.fillText(bytes(Math.round((max * i) / 4)) + "/s", left - 6, y + 4);
  }

  g.textAlign = "center";
  for (let m = 0; m <= window / 60; m++) {
    const x = left + pw - (pw * m * 60) / window;
    g.fillText(m ? "-" + m + " min" : "now", x, h - 6);
  }

  const x = (t) => left + pw - (pw * (now - t)) / (window * 1000);
  const y = (v) => top + ph - (ph * v) / max;

  g.lineWidth = 2;
  for (const { key, colour } of series) {
    g.strokeStyle = colour;
    g.beginPath();
    samples.forEach((s, i) => {
      if (i) g.lineTo(x(s.t), y(s.v[key] || 0));
      else g.moveTo(x(s.t), y(s.v[key] || 0));
    });
    g.stroke();
  }
}
