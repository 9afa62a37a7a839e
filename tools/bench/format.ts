/** A rate and a duration as the report prints them (render.ts, and the scenarios' progress). */
export const fmtRate = (n: number) => `${n >= 100 ? Math.round(n) : n.toFixed(1)}/s`;
export const fmtMs = (n: number) =>
  Number.isNaN(n) ? '-' : n >= 100 ? n.toFixed(0) : n.toFixed(1);
