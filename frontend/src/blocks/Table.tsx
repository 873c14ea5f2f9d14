// A table whose columns sort on click (numbers as numbers, then text; click again to reverse).
import { useMemo, useState } from 'react';
import type { TableColumn } from './types';
import { cellText } from './format';

type Sort = { key: string; direction: 'asc' | 'desc' } | null;

export function compareCells(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === null || a === undefined || a === '') return 1;
  if (b === null || b === undefined || b === '') return -1;
  const numberA = typeof a === 'number' ? a : Number(a);
  const numberB = typeof b === 'number' ? b : Number(b);
  if (typeof a !== 'boolean' && typeof b !== 'boolean' && Number.isFinite(numberA) && Number.isFinite(numberB)) return numberA - numberB;
  return cellText(a).localeCompare(cellText(b), undefined, { numeric: true, sensitivity: 'base' });
}

export function sortRows(rows: Record<string, unknown>[], sort: Sort): Record<string, unknown>[] {
  if (!sort) return rows;
  const sign = sort.direction === 'asc' ? 1 : -1;
  return rows
    .map((row, index) => ({ row, index }))
    .sort((x, y) => {
      const order = compareCells(x.row[sort.key], y.row[sort.key]);
      // Empty cells stay last either way; ties keep their order.
      const emptyX = x.row[sort.key] === null || x.row[sort.key] === undefined || x.row[sort.key] === '';
      const emptyY = y.row[sort.key] === null || y.row[sort.key] === undefined || y.row[sort.key] === '';
      if (emptyX !== emptyY) return emptyX ? 1 : -1;
      return order * sign || x.index - y.index;
    })
    .map(({ row }) => row);
}

export function Table({ columns, data }: { columns: TableColumn[]; data: Record<string, unknown>[] }) {
  const [sort, setSort] = useState<Sort>(null);
  const rows = useMemo(() => sortRows(Array.isArray(data) ? data : [], sort), [data, sort]);
  const toggle = (key: string) =>
    setSort((current) => (current?.key !== key ? { key, direction: 'asc' } : current.direction === 'asc' ? { key, direction: 'desc' } : null));
  if (!rows.length) return <div className="block-empty">No rows.</div>;
  return (
    <div className="table-wrap">
      <table className="data-table">
        <thead>
          <tr>
            {columns.map((column) => {
              const active = sort?.key === column.key;
              return (
                <th key={column.key} aria-sort={active ? (sort.direction === 'asc' ? 'ascending' : 'descending') : 'none'}>
                  <button type="button" className="sort-button" onClick={() => toggle(column.key)}>
                    {column.label}
                    <span className="sort-mark" aria-hidden="true">
                      {active ? (sort.direction === 'asc' ? '▲' : '▼') : '↕'}
                    </span>
                  </button>
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody>
          {rows.map((row, index) => (
            <tr key={index}>
              {columns.map((column) => (
                <td key={column.key} className={typeof row[column.key] === 'number' ? 'num' : undefined}>
                  {cellText(row[column.key])}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      <div className="table-foot">{rows.length} {rows.length === 1 ? 'row' : 'rows'}</div>
    </div>
  );
}
