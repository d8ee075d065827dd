import "./index.css";
