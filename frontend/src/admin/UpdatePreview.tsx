// What updating an installed tool to its listing's newest version would change, with the
// buttons to do it or not. Shared by the admin tool card and the marketplace's installed list.
import { DiffView } from './DiffView';
import { ConfirmButtons } from './parts';

export interface UpdatePreviewData {
  from_version: number;
  to_version: number;
  diff: string;
}

export function UpdatePreview({
  preview,
  onUpdate,
  onCancel,
}: {
  preview: UpdatePreviewData;
  onUpdate: () => void;
  onCancel: () => void;
}) {
  if (preview.from_version === preview.to_version && !preview.diff.trim()) {
    return (
      <div className="review" aria-label="Update preview">
        <p className="small">Up to date with the listing (v{preview.to_version}).</p>
      </div>
    );
  }
  return (
    <div className="review" aria-label="Update preview">
      <p className="small">
        Update from listing v{preview.from_version} to v{preview.to_version}:
      </p>
      <DiffView diff={preview.diff} label="Changes" />
      <ConfirmButtons label={`Update to v${preview.to_version}`} onConfirm={onUpdate} onCancel={onCancel} />
    </div>
  );
}
