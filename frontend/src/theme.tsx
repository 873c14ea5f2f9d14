// Light, dark or the system's choice; remembered in localStorage.
import { createContext, useContext, useEffect, useState, type ReactNode } from 'react';

export type ThemeChoice = 'system' | 'light' | 'dark';
type Theme = 'light' | 'dark';

const ThemeContext = createContext<{ theme: Theme; choice: ThemeChoice; setChoice: (choice: ThemeChoice) => void }>({
  theme: 'light',
  choice: 'system',
  setChoice: () => {},
});

function systemTheme(): Theme {
  return typeof matchMedia === 'function' && matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

export function ThemeProvider({ children }: { children: ReactNode }) {
  const [choice, setChoice] = useState<ThemeChoice>(() => (localStorage.getItem('wright.theme') as ThemeChoice | null) ?? 'system');
  const [system, setSystem] = useState<Theme>(systemTheme);
  useEffect(() => {
    if (typeof matchMedia !== 'function') return;
    const query = matchMedia('(prefers-color-scheme: dark)');
    const update = () => setSystem(query.matches ? 'dark' : 'light');
    query.addEventListener('change', update);
    return () => query.removeEventListener('change', update);
  }, []);
  const theme = choice === 'system' ? system : choice;
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
    localStorage.setItem('wright.theme', choice);
  }, [theme, choice]);
  return <ThemeContext.Provider value={{ theme, choice, setChoice }}>{children}</ThemeContext.Provider>;
}

export const useTheme = () => useContext(ThemeContext);
