import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import { Blocks } from './Blocks';
import { formData, initialValues, missingFields } from './Form';
import type { FormField } from './types';

const fields: FormField[] = [
  { name: 'title', label: 'Title', type: 'text', required: true },
  { name: 'count', label: 'Count', type: 'number', default: 3 },
  { name: 'kind', label: 'Kind', type: 'select', options: ['bug', 'idea'], default: 'idea' },
  { name: 'urgent', label: 'Urgent', type: 'checkbox', default: true },
  { name: 'notes', label: 'Notes', type: 'textarea' },
  { name: 'due', label: 'Due', type: 'date', default: '2026-12-01' },
];

describe('form answer shape', () => {
  it('starts from the defaults', () => {
    expect(initialValues(fields)).toEqual({ title: '', count: '3', kind: 'idea', urgent: true, notes: '', due: '2026-12-01' });
  });

  it('types the data: numbers, booleans, strings, dates', () => {
    const data = formData(fields, { ...initialValues(fields), title: 'Fix it', count: '2.5' });
    expect(data).toEqual({ title: 'Fix it', count: 2.5, kind: 'idea', urgent: true, notes: '', due: '2026-12-01' });
    expect(formData(fields, { ...initialValues(fields), count: '' }).count).toBeNull();
  });

  it('lists required fields that are empty', () => {
    expect(missingFields(fields, initialValues(fields))).toEqual(['title']);
    expect(missingFields([{ name: 'ok', label: 'OK', type: 'checkbox', required: true }], { ok: false })).toEqual(['ok']);
  });

  it('submits {action: "submit", data} from the rendered form, and not while a required field is empty', async () => {
    const onAnswer = vi.fn().mockResolvedValue(undefined);
    render(<Blocks blocks={[{ type: 'form', fields, submitLabel: 'Create' }]} onAnswer={onAnswer} />);
    fireEvent.click(screen.getByRole('button', { name: 'Create' }));
    expect(onAnswer).not.toHaveBeenCalled();
    expect(screen.getByText('Required')).toBeTruthy();

    fireEvent.change(screen.getByLabelText(/Title/), { target: { value: 'Ship' } });
    fireEvent.change(screen.getByLabelText('Count'), { target: { value: '7' } });
    fireEvent.change(screen.getByLabelText('Kind'), { target: { value: 'bug' } });
    fireEvent.click(screen.getByLabelText('Urgent'));
    fireEvent.change(screen.getByLabelText('Notes'), { target: { value: 'soon' } });
    fireEvent.click(screen.getByRole('button', { name: 'Create' }));
    await waitFor(() => expect(onAnswer).toHaveBeenCalledTimes(1));
    expect(onAnswer).toHaveBeenCalledWith({ action: 'submit', data: { title: 'Ship', count: 7, kind: 'bug', urgent: false, notes: 'soon', due: '2026-12-01' } });
    // no Dismiss button beside a form: its submit is the answer
    expect(screen.queryByRole('button', { name: 'Dismiss' })).toBeNull();
  });
});
