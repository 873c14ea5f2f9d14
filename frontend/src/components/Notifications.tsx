// The person's notifications (the agent's `notify`, a schedule's result or a missed schedule):
// the unread ones when the page opens, then each new one live from the server's notification
// stream (reconnecting with `?after=<last id>`, so none is lost). Dismissing one marks it read.
import { useEffect, useState } from 'react';
import { api, type Notification } from '../api/client';
import { useInvalidate } from '../api/queries';
import { Markdown } from '../blocks/Markdown';
import { navigate, routePath } from '../router';

/** How many notifications are shown at once; older unread ones stay in the list API. */
const SHOWN = 5;

export function Notifications({ agent }: { agent: string }) {
  const [items, setItems] = useState<Notification[]>([]);
  const invalidate = useInvalidate();

  useEffect(() => {
    let closed = false;
    let source: EventSource | null = null;
    let retry: ReturnType<typeof setTimeout> | undefined;
    let last = 0;
    const add = (notification: Notification) => {
      last = Math.max(last, notification.id);
      setItems((current) => (current.some((item) => item.id === notification.id) ? current : [...current, notification].slice(-SHOWN)));
    };
    const open = () => {
      if (closed) return;
      source = new EventSource(api.notificationsStreamUrl(agent, last));
      source.addEventListener('notification', (message) => {
        add(JSON.parse((message as MessageEvent<string>).data) as Notification);
        // A scheduled run's answer or a missed schedule: its conversation (and maybe a new
        // session) belongs in the sidebar now, not at the next reload.
        void invalidate.conversations(agent);
        // and the Schedules page's last run of that schedule
        void invalidate.schedules(agent);
      });
      source.addEventListener('error', () => {
        source?.close();
        if (!closed) retry = setTimeout(open, 2000);
      });
    };
    setItems([]);
    api.notifications(agent).then(
      (list) => {
        if (closed) return;
        last = list.reduce((max, item) => Math.max(max, item.id), 0);
        list
          .filter((item) => !item.read_at)
          .reverse()
          .forEach(add);
        open();
      },
      () => open(),
    );
    return () => {
      closed = true;
      clearTimeout(retry);
      source?.close();
    };
  }, [agent, invalidate]);

  const dismiss = (notification: Notification) => {
    setItems((current) => current.filter((item) => item.id !== notification.id));
    void api.markNotificationRead(agent, notification.id).catch(() => {});
  };

  if (!items.length) return null;
  return (
    <section className="notifications" aria-label="Notifications" aria-live="polite">
      {items.map((item) => (
        <article key={item.id} className="notification" aria-label={item.title}>
          <header>
            <span aria-hidden="true">🔔</span> <strong>{item.title}</strong>
            <span className="muted small"> · {new Date(item.created_at).toLocaleString()}</span>
          </header>
          <Markdown content={item.text} />
          <div className="card-actions">
            {item.conversation_id && (
              <button
                type="button"
                className="button small"
                onClick={() => {
                  navigate(routePath({ page: 'agent', agent, conversation: item.conversation_id! }));
                  dismiss(item);
                }}
              >
                Open
              </button>
            )}
            <button type="button" className="button ghost small" onClick={() => dismiss(item)}>
              Dismiss
            </button>
          </div>
        </article>
      ))}
    </section>
  );
}
