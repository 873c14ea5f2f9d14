// The chart block's `data` is an open object in the tool schema, so the canvas accepts the
// shapes models usually write and turns them into one: labels along the x axis (or pie
// slices) and one or more named series of numbers.
//
// Accepted (first match wins):
//   {labels: [...], datasets: [{label, data: [n...]}]}          (Chart.js)
//   {labels: [...], series: [{name, data|values: [n...]}]}
//   {labels: [...], values: [n...]}  /  {labels, data: [n...]}
//   {x: [...], y: [n...]}  /  {x: [...], y: {name: [n...]}}
//   {points|data|rows: [{label|x|name|key, value|y|count, ...more numeric keys}]}
//   {a: 1, b: 2}                                                 (a plain map: one series)

export interface ChartSeries {
  name: string;
  values: number[];
}

export interface ChartModel {
  labels: string[];
  series: ChartSeries[];
}

const LABEL_KEYS = ['label', 'x', 'name', 'key', 'category', 'date', 'month', 'day', 'year'];

function toNumber(value: unknown): number {
  if (typeof value === 'number') return Number.isFinite(value) ? value : 0;
  if (typeof value === 'string') {
    const parsed = Number(value.replace(/[,_\s]/g, ''));
    return Number.isFinite(parsed) ? parsed : 0;
  }
  if (typeof value === 'boolean') return value ? 1 : 0;
  return 0;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function fromRows(rows: unknown[]): ChartModel | null {
  const records = rows.filter(isRecord);
  if (!records.length) return null;
  const first = records[0];
  const labelKey = LABEL_KEYS.find((key) => key in first) ?? Object.keys(first).find((key) => typeof first[key] === 'string');
  const valueKeys = Object.keys(first).filter((key) => key !== labelKey && (typeof first[key] === 'number' || (typeof first[key] === 'string' && first[key] !== '' && Number.isFinite(Number(first[key])))));
  if (!valueKeys.length) return null;
  return {
    labels: records.map((row, index) => (labelKey ? String(row[labelKey] ?? '') : String(index + 1))),
    series: valueKeys.map((key) => ({ name: key, values: records.map((row) => toNumber(row[key])) })),
  };
}

export function normalizeChart(data: unknown): ChartModel {
  const empty: ChartModel = { labels: [], series: [] };
  if (Array.isArray(data)) return fromRows(data) ?? empty;
  if (!isRecord(data)) return empty;

  const labels = Array.isArray(data.labels) ? data.labels.map(String) : null;
  const seriesList = Array.isArray(data.datasets) ? data.datasets : Array.isArray(data.series) ? data.series : null;
  if (seriesList) {
    const series = seriesList.filter(isRecord).map((entry, index) => {
      const values = Array.isArray(entry.data) ? entry.data : Array.isArray(entry.values) ? entry.values : [];
      return { name: String(entry.label ?? entry.name ?? `Series ${index + 1}`), values: values.map(toNumber) };
    });
    const length = Math.max(0, ...series.map((entry) => entry.values.length));
    return { labels: labels ?? Array.from({ length }, (_, index) => String(index + 1)), series };
  }
  if (labels) {
    const values = Array.isArray(data.values) ? data.values : Array.isArray(data.data) ? data.data : null;
    if (values) return { labels, series: [{ name: String(data.name ?? data.label ?? 'Value'), values: values.map(toNumber) }] };
  }
  if (Array.isArray(data.x)) {
    const xs = data.x.map(String);
    if (Array.isArray(data.y)) return { labels: xs, series: [{ name: String(data.name ?? 'y'), values: data.y.map(toNumber) }] };
    if (isRecord(data.y)) {
      return {
        labels: xs,
        series: Object.entries(data.y).map(([name, values]) => ({ name, values: Array.isArray(values) ? values.map(toNumber) : [] })),
      };
    }
  }
  for (const key of ['points', 'data', 'rows', 'items']) {
    const rows = data[key];
    if (Array.isArray(rows)) {
      const model = fromRows(rows);
      if (model) return model;
    }
  }
  const entries = Object.entries(data).filter(([, value]) => typeof value === 'number');
  if (entries.length) return { labels: entries.map(([key]) => key), series: [{ name: 'Value', values: entries.map(([, value]) => value as number) }] };
  return empty;
}
