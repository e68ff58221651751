import react from '@vitejs/plugin-react'
import { defineConfig } from 'vite'

// The dashboard's single-page app, built into dist/dashboard and served by the service at /dashboard/.
export default defineConfig({
  root: import.meta.dirname,
  base: '/dashboard/',
  plugins: [react()],
  build: {
    outDir: '../dist/dashboard',
    emptyOutDir: true,
    // Nothing inline: the Content-Security-Policy allows only this origin's scripts and styles.
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 1000,
  },
  server: { proxy: { '/integration': 'http://127.0.0.1:3000', '/dashboard/api': 'http://127.0.0.1:3000' } },
})
