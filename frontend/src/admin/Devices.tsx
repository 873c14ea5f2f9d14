// Settings → Devices: the browsers that get Web Push notifications (a notification, a
// scheduled task's answer, a question or approval waiting), this one added with a button,
// any removed.
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, ApiError } from '../api/client';
import { keys } from '../api/queries';
import { pushSupported, subscribeThisBrowser } from '../push';
import { ErrorAlert } from './parts';

export function Devices() {
  const client = useQueryClient();
  const devices = useQuery({ queryKey: keys.devices, queryFn: () => api.pushDevices() });
  const refresh = () => client.invalidateQueries({ queryKey: keys.devices });
  const subscribe = useMutation({ mutationFn: subscribeThisBrowser, onSettled: refresh });
  const remove = useMutation({ mutationFn: (id: number) => api.removePushDevice(id), onSettled: refresh });
  const off = devices.error instanceof ApiError && devices.error.code === 'push_off';
  const error = subscribe.error ?? remove.error ?? (off ? null : devices.error);
  return (
    <section className="admin-card" aria-label="Devices">
      <h2>Devices</h2>
      <p className="muted small">Browsers that are told when a notification arrives, a scheduled task answers, or a question or an approval waits for you — also with Wright closed. Tapping one opens its conversation.</p>
      <ErrorAlert error={error ? error.message : null} />
      {off ? (
        <p className="muted">Web Push is off on this server ([push] enabled = false in config.toml).</p>
      ) : devices.data === undefined ? (
        <p className="muted">Loading…</p>
      ) : devices.data.length === 0 ? (
        <p className="muted">No device is subscribed.</p>
      ) : (
        <ul className="device-list">
          {devices.data.map((device) => (
            <li key={device.id} className="device">
              <div>
                <b>{device.label}</b>
                <span className="muted small"> · {device.service} · since {new Date(device.created_at).toLocaleDateString()}</span>
                {device.last_error && <div className="small danger-text">Last push failed: {device.last_error}</div>}
              </div>
              <button type="button" className="button ghost small" aria-label={`Remove ${device.label}`} disabled={remove.isPending} onClick={() => remove.mutate(device.id)}>
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
      {!off && (
        <div className="card-actions">
          <button type="button" className="button primary small" disabled={!pushSupported() || subscribe.isPending} onClick={() => subscribe.mutate()}>
            Notify this device
          </button>
          {!pushSupported() && <span className="muted small">This browser cannot receive pushes here (it needs HTTPS or localhost, and the Push API).</span>}
        </div>
      )}
    </section>
  );
}
