import { QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { RouterProvider } from 'react-router';
import { App } from './App';
import { queryClient } from './api/queries';
import { registerServiceWorker } from './push';
import { createAppRouter } from './router';
import { ThemeProvider } from './theme';
import './styles.css';

const router = createAppRouter(<App />);
registerServiceWorker();

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <ThemeProvider>
        <RouterProvider router={router} />
      </ThemeProvider>
    </QueryClientProvider>
  </StrictMode>,
);
