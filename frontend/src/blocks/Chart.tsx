// Line, bar, area and pie charts drawn as plain SVG: no chart library (they weigh 100+ kB).
import { useId, useState } from 'react';
import { normalizeChart, type ChartModel } from './chartData';

const WIDTH = 560;
const HEIGHT = 260;
const PAD = { top: 16, right: 16, bottom: 36, left: 48 };

function niceMax(value: number): number {
  if (value <= 0) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  const step = [1, 2, 2.5, 5, 10].find((candidate) => candidate * magnitude >= value) ?? 10;
  return step * magnitude;
}

function formatNumber(value: number): string {
  if (Math.abs(value) >= 1e6) return (value / 1e6).toFixed(1).replace(/\.0$/, '') + 'M';
  if (Math.abs(value) >= 1e3) return (value / 1e3).toFixed(1).replace(/\.0$/, '') + 'k';
  return String(Math.round(value * 100) / 100);
}

const color = (index: number) => `var(--chart-${index % 6})`;

export function Chart({ chartType, data, title }: { chartType: string; data: unknown; title?: string }) {
  const model = normalizeChart(data);
  const titleId = useId();
  if (!model.series.length || !model.labels.length) {
    return <div className="block-empty">This chart has no data to show.</div>;
  }
  return (
    <figure className="chart" aria-labelledby={title ? titleId : undefined}>
      {title && <figcaption id={titleId}>{title}</figcaption>}
      {chartType === 'pie' ? <Pie model={model} /> : <Cartesian model={model} kind={chartType === 'bar' ? 'bar' : chartType === 'area' ? 'area' : 'line'} />}
      {(model.series.length > 1 || chartType === 'pie') && <Legend names={chartType === 'pie' ? model.labels : model.series.map((s) => s.name)} />}
      <ChartTable model={model} />
    </figure>
  );
}

function Legend({ names }: { names: string[] }) {
  return (
    <ul className="chart-legend">
      {names.map((name, index) => (
        <li key={index}>
          <span className="swatch" style={{ background: color(index) }} />
          {name}
        </li>
      ))}
    </ul>
  );
}

/** The numbers behind the chart, for screen readers and for anyone who wants them. */
function ChartTable({ model }: { model: ChartModel }) {
  return (
    <details className="chart-data">
      <summary>Data</summary>
      <table>
        <thead>
          <tr>
            <th />
            {model.series.map((series) => (
              <th key={series.name}>{series.name}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {model.labels.map((label, row) => (
            <tr key={row}>
              <th>{label}</th>
              {model.series.map((series) => (
                <td key={series.name}>{series.values[row] ?? ''}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  );
}

function Cartesian({ model, kind }: { model: ChartModel; kind: 'line' | 'bar' | 'area' }) {
  const [hover, setHover] = useState<number | null>(null);
  const all = model.series.flatMap((series) => series.values);
  const min = Math.min(0, ...all);
  const max = niceMax(Math.max(...all, 0));
  const innerWidth = WIDTH - PAD.left - PAD.right;
  const innerHeight = HEIGHT - PAD.top - PAD.bottom;
  const count = model.labels.length;
  const band = innerWidth / count;
  const y = (value: number) => PAD.top + innerHeight - ((value - min) / (max - min || 1)) * innerHeight;
  const x = (index: number) => (kind === 'bar' ? PAD.left + band * index + band / 2 : PAD.left + (count === 1 ? innerWidth / 2 : (innerWidth * index) / (count - 1)));
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((fraction) => min + (max - min) * fraction);
  const labelEvery = Math.ceil(count / 10);
  const barWidth = Math.max(2, (band * 0.75) / model.series.length);

  return (
    <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" className="chart-svg" onMouseLeave={() => setHover(null)}>
      {ticks.map((tick) => (
        <g key={tick}>
          <line x1={PAD.left} x2={WIDTH - PAD.right} y1={y(tick)} y2={y(tick)} className="chart-grid" />
          <text x={PAD.left - 6} y={y(tick)} className="chart-tick" textAnchor="end" dominantBaseline="middle">
            {formatNumber(tick)}
          </text>
        </g>
      ))}
      {model.labels.map((label, index) =>
        index % labelEvery === 0 ? (
          <text key={index} x={x(index)} y={HEIGHT - PAD.bottom + 16} className="chart-tick" textAnchor="middle">
            {label.length > 12 ? label.slice(0, 11) + '…' : label}
          </text>
        ) : null,
      )}
      {model.series.map((series, seriesIndex) => {
        if (kind === 'bar') {
          return series.values.map((value, index) => {
            const left = PAD.left + band * index + (band - barWidth * model.series.length) / 2 + barWidth * seriesIndex;
            const top = y(Math.max(value, 0));
            return (
              <rect key={`${seriesIndex}-${index}`} x={left} y={top} width={barWidth} height={Math.abs(y(value) - y(0))} fill={color(seriesIndex)} rx={2} opacity={hover === null || hover === index ? 1 : 0.5}>
                <title>{`${model.labels[index]} · ${series.name}: ${value}`}</title>
              </rect>
            );
          });
        }
        const points = series.values.map((value, index) => `${x(index)},${y(value)}`).join(' ');
        return (
          <g key={seriesIndex}>
            {kind === 'area' && (
              <polygon points={`${x(0)},${y(Math.max(min, 0))} ${points} ${x(series.values.length - 1)},${y(Math.max(min, 0))}`} fill={color(seriesIndex)} opacity={0.18} />
            )}
            <polyline points={points} fill="none" stroke={color(seriesIndex)} strokeWidth={2} strokeLinejoin="round" />
            {series.values.map((value, index) => (
              <circle key={index} cx={x(index)} cy={y(value)} r={hover === index ? 4.5 : 2.5} fill={color(seriesIndex)}>
                <title>{`${model.labels[index]} · ${series.name}: ${value}`}</title>
              </circle>
            ))}
          </g>
        );
      })}
      {model.labels.map((_, index) => (
        <rect key={index} x={kind === 'bar' ? PAD.left + band * index : x(index) - band / 2} y={PAD.top} width={band} height={innerHeight} fill="transparent" onMouseEnter={() => setHover(index)} />
      ))}
      {hover !== null && (
        <g className="chart-hover" pointerEvents="none">
          <line x1={x(hover)} x2={x(hover)} y1={PAD.top} y2={PAD.top + innerHeight} className="chart-grid" />
          <text x={Math.min(x(hover) + 6, WIDTH - 150)} y={PAD.top + 12} className="chart-tooltip">
            {model.labels[hover]}: {model.series.map((series) => formatNumber(series.values[hover] ?? 0)).join(' / ')}
          </text>
        </g>
      )}
    </svg>
  );
}

function Pie({ model }: { model: ChartModel }) {
  const values = model.series[0].values.map((value) => Math.max(0, value));
  const total = values.reduce((sum, value) => sum + value, 0) || 1;
  const radius = 100;
  const center = { x: WIDTH / 2, y: HEIGHT / 2 };
  let angle = -Math.PI / 2;
  return (
    <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" className="chart-svg">
      {values.map((value, index) => {
        const sweep = (value / total) * Math.PI * 2;
        const start = angle;
        angle += sweep;
        const label = `${model.labels[index]}: ${value} (${Math.round((value / total) * 100)}%)`;
        if (sweep >= Math.PI * 2 - 1e-9) {
          return (
            <circle key={index} cx={center.x} cy={center.y} r={radius} fill={color(index)}>
              <title>{label}</title>
            </circle>
          );
        }
        const large = sweep > Math.PI ? 1 : 0;
        const x1 = center.x + radius * Math.cos(start);
        const y1 = center.y + radius * Math.sin(start);
        const x2 = center.x + radius * Math.cos(angle);
        const y2 = center.y + radius * Math.sin(angle);
        return (
          <path key={index} d={`M${center.x},${center.y} L${x1},${y1} A${radius},${radius} 0 ${large} 1 ${x2},${y2} Z`} fill={color(index)} stroke="var(--bg-panel)" strokeWidth={1.5}>
            <title>{label}</title>
          </path>
        );
      })}
    </svg>
  );
}
